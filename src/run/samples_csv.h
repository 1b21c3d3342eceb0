#pragma once
// samples.csv: one row per sampler tick, written on the sampler's thread as it runs (so a
// killed trainscope still leaves the rows so far). Columns: t_s, unix_s, host_cpu_pct,
// tree_cpu_pct (100 = one core), tree_rss_bytes, tree_processes, then per GPU i:
// gpu<i>_util_pct, gpu<i>_mem_used_bytes, gpu<i>_power_w, gpu<i>_temp_c, gpu<i>_sm_active_pct.
// Unknown values are empty.
#include <cstdio>
#include <string>

#include "sample/readings.h"

namespace ts::run {

class SamplesCsv {
 public:
  explicit SamplesCsv(const std::string& path);  // throws UserError
  ~SamplesCsv();
  void write(const sample::Tick& t);
  void close();

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
  int gpus_ = -1;  // columns fixed by the first tick
};

}  // namespace ts::run
