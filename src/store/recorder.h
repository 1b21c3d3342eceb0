#pragma once
// Records a sampling session: a run row, its devices, then every tick into the SQLite store
// and/or a CSV file. Its on_tick() is what Sampler::start() calls on the sampler thread.
#include <memory>
#include <string>

#include "sample/sampler.h"
#include "store/csv_writer.h"
#include "store/store.h"

namespace ts::store {

struct RecorderConfig {
  std::string db_path;   // "" = no SQLite recording
  std::string csv_path;  // "" = no CSV
  std::string kind = "watch";
  std::string command;
  double max_loss_s = 1.0;  // a crash loses at most this much
};

class Recorder {
 public:
  Recorder(RecorderConfig cfg, const sample::Sampler& sampler);
  ~Recorder();
  void on_tick(const sample::Tick& t);
  void finish(int exit_code = 0);  // marks the run finished and flushes
  int64_t run_id() const { return run_id_; }
  Store* store() { return store_.get(); }

 private:
  RecorderConfig cfg_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<CsvWriter> csv_;
  int64_t run_id_ = 0;
  bool finished_ = false;
};

}  // namespace ts::store
