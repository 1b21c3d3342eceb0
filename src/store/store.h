#pragma once
// The recording store: one SQLite file holding many runs (a `watch`, a `run`), with their
// devices, GPU, host and process samples and, for `run`, the report JSON.
// WAL journal; samples are kept in memory and written in one short transaction before they could
// hold more than `max_loss` seconds, so a crash (even kill -9) loses at most that. The write lock
// is held only while a batch is written, so runs side by side share one store: each waits its
// turn (SQLite's busy timeout), and a batch that still finds the lock taken waits for the next tick.
// Schema: docs/SAMPLER.md.
#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sample/readings.h"

namespace ts::store {

struct RunInfo {
  int64_t id = 0;
  std::string kind;     // watch | run | snapshot
  std::string command;  // what was run / watched
  std::string hostname;
  double started_unix = 0;
  double finished_unix = -1;  // -1 while running, or if the recorder died
  int exit_code = -1;         // -1 unknown
  double interval_ms = 0;
  int64_t root_pid = 0;
  bool has_report = false;
  int64_t gpu_samples = 0, host_samples = 0, process_samples = 0;  // list_runs/get_run fill these
};

class Store {
 public:
  // Opens (creating the file, its folder and the schema when needed). Throws ts::UserError
  // naming the file when it cannot be opened or is not a trainscope store.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // $TRAINSCOPE_HOME/trainscope.db, else $XDG_DATA_HOME/trainscope/trainscope.db, else
  // ~/.local/share/trainscope/trainscope.db.
  static std::string default_path();
  const std::string& path() const { return path_; }

  int64_t add_run(const RunInfo& info);  // returns the new run's id (hostname filled if empty)
  void finish_run(int64_t run_id, double finished_unix, int exit_code);
  std::vector<RunInfo> list_runs();      // newest first
  std::optional<RunInfo> get_run(int64_t run_id);
  void put_report(int64_t run_id, const std::string& json);
  std::optional<std::string> get_report(int64_t run_id);

  void add_devices(int64_t run_id, const std::vector<sample::GpuInfo>& gpus,
                   const std::string& driver_version);
  std::vector<sample::GpuInfo> devices(int64_t run_id);

  // Samples. Process rows are written only for ticks that read the tree (processes_fresh).
  void add_tick(int64_t run_id, const sample::Tick& t);
  // Read back, one Tick per recorded instant, in time order (t_s = seconds since the first).
  std::vector<sample::Tick> ticks(int64_t run_id);

  // Commit before the open batch could hold more than `seconds` of samples when the next
  // tick arrives `tick_interval_s` later, with a margin for late ticks (default: commit
  // batches older than 0.7 s, i.e. 1 s with 0.1 s ticks).
  void set_max_loss(double seconds, double tick_interval_s);
  void flush();  // write the samples held now; throws when the store stayed locked (busy timeout)

 private:
  struct PendingTick {
    int64_t run_id;
    sample::Tick tick;
  };
  void exec(const char* sql);
  sqlite3_stmt* prepare(const char* sql);
  void step_done(sqlite3_stmt* s);  // steps an INSERT/UPDATE, leaves it reset, throws on failure
  bool begin_write();               // BEGIN IMMEDIATE; false when another writer kept the lock
  void rollback() noexcept;
  // body() in one write transaction, rolled back if it throws; false when the lock stayed taken.
  bool write(const std::function<void()>& body);
  bool write_ticks();               // the pending ticks in one transaction; false: locked, kept
  void insert_tick(int64_t run_id, const sample::Tick& t);
  [[noreturn]] void fail(const std::string& what);

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt *ins_gpu_ = nullptr, *ins_host_ = nullptr, *ins_proc_ = nullptr;
  std::vector<PendingTick> pending_;
  double pending_since_ = 0;  // monotonic seconds of the oldest pending tick
  double commit_after_s_ = 0.7;
};

}  // namespace ts::store
