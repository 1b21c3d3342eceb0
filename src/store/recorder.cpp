#include "store/recorder.h"

#include <chrono>

namespace ts::store {

Recorder::Recorder(RecorderConfig cfg, const sample::Sampler& sampler) : cfg_(std::move(cfg)) {
  const double interval_s = std::chrono::duration<double>(sampler.config().interval).count();
  if (!cfg_.db_path.empty()) {
    store_ = std::make_unique<Store>(cfg_.db_path);
    store_->set_max_loss(cfg_.max_loss_s, interval_s);
    RunInfo r;
    r.kind = cfg_.kind;
    r.command = cfg_.command;
    r.started_unix =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    r.interval_ms = interval_s * 1000.0;
    r.root_pid = sampler.config().root_pid;
    run_id_ = store_->add_run(r);
    store_->add_devices(run_id_, sampler.gpus(), sampler.driver_version());
  }
  if (!cfg_.csv_path.empty()) csv_ = std::make_unique<CsvWriter>(cfg_.csv_path);
}

Recorder::~Recorder() {
  if (!finished_) {
    // Left unfinished (finished_unix NULL) on purpose when finish() was not called: the
    // run did not end normally. Still flush what we have.
    try {
      if (store_) store_->flush();
    } catch (const std::exception&) {  // a destructor must not throw: the samples held are lost
    }
    if (csv_) csv_->flush();
  }
}

void Recorder::on_tick(const sample::Tick& t) {
  if (store_) store_->add_tick(run_id_, t);
  if (csv_) csv_->write(t);
}

void Recorder::finish(int exit_code) {
  if (finished_) return;
  finished_ = true;
  if (store_)
    store_->finish_run(run_id_,
                       std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
                       exit_code);
  if (csv_) csv_->flush();
}

}  // namespace ts::store
