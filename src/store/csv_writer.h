#pragma once
// CSV of the samples: timestamp,gpu_idx,util_pct,mem_used_mib,mem_total_mib,temp_c,power_w
// first (the columns of a minimal nvidia-smi-style GPU log), then everything else
// (docs/SAMPLER.md lists them). One row per GPU per tick; a machine without GPUs gets one host
// row per tick with the GPU columns empty. Empty = not available. Each column names its unit:
// _mib is MiB (2^20 bytes, nvidia-smi's "MiB"), _mib_s MiB per second; timestamp is ISO 8601
// UTC with milliseconds.
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
