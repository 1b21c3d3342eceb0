#pragma once
// CSV of the samples. The first columns are seed 000's GPUMonitor columns, so its readers
// keep working: timestamp,gpu_idx,util_pct,mem_used_mb,mem_total_mb,temp_c,power_w
// then everything else (docs/SAMPLER.md lists them). One row per GPU per tick; a machine
// without GPUs gets one host row per tick with the GPU columns empty. Empty = not available.
// mb is MiB (as nvidia-smi's "MiB"); timestamp is ISO 8601 UTC with milliseconds.
#include <cstdio>
#include <string>
#include <vector>

#include "sample/readings.h"

namespace ts::store {

class CsvWriter {
 public:
  // Throws ts::UserError naming the file when it cannot be created.
  explicit CsvWriter(const std::string& path);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  void write(const sample::Tick& t);
  void flush();

  static const std::vector<std::string>& columns();
  static std::string iso8601(double unix_s);  // 2026-11-22T04:40:00.123Z

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  double last_flush_ = 0;
};

}  // namespace ts::store
