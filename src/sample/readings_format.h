#pragma once
// Readings as JSON (snapshot --json) and as text for people (snapshot, watch without a
// terminal). Formatting only: every number comes from the readings.
#include <string>
#include <vector>

#include "sample/readings.h"
#include "util/json_writer.h"

namespace ts::sample {

struct SnapshotView {
  bool nvml = false;
  std::string nvml_error, driver_version;
  std::vector<GpuInfo> gpus;
  Tick tick;
  pid_t root_pid = 0;
};

void write_json(JsonWriter& w, const SnapshotView& s);
std::string snapshot_text(const SnapshotView& s);
// One line per tick for `watch` without a terminal, e.g.
// "12:00:01.100 gpu0 97% sm 63% tensor 41% mem 40.0/80.0 GiB 71C 512W | cpu 37% | tree 3 procs 180% cpu"
std::string plain_line(const Tick& t);

}  // namespace ts::sample
