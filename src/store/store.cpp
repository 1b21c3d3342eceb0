#include "store/store.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <map>

#include "util/error.h"

namespace ts::store {

namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
INSERT OR IGNORE INTO meta VALUES('schema', 'trainscope-store-1');
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  command TEXT,
  hostname TEXT,
  started_unix REAL NOT NULL,
  finished_unix REAL,
  exit_code INTEGER,
  interval_ms REAL,
  root_pid INTEGER,
  report_json TEXT
);
CREATE TABLE IF NOT EXISTS devices(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  gpu_idx INTEGER NOT NULL,
  name TEXT, uuid TEXT, pci_bus_id TEXT, driver_version TEXT,
  mem_total_bytes REAL, sm_clock_max_mhz REAL, mem_clock_max_mhz REAL,
  pcie_gen_max INTEGER, pcie_width_max INTEGER, power_limit_w REAL, gpm_supported INTEGER,
  PRIMARY KEY(run_id, gpu_idx)
);
CREATE TABLE IF NOT EXISTS gpu_samples(
  run_id INTEGER NOT NULL, t_unix REAL NOT NULL, gpu_idx INTEGER NOT NULL, lost INTEGER,
  util_pct REAL, mem_util_pct REAL, mem_used_bytes REAL, mem_total_bytes REAL,
  temp_c REAL, power_w REAL, energy_j REAL, sm_clock_mhz REAL, mem_clock_mhz REAL,
  clock_reasons INTEGER, pcie_gen INTEGER, pcie_width INTEGER,
  pcie_tx_bytes_per_s REAL, pcie_rx_bytes_per_s REAL,
  sm_active_pct REAL, sm_occupancy_pct REAL, tensor_active_pct REAL, dram_bw_pct REAL
);
CREATE INDEX IF NOT EXISTS gpu_samples_run ON gpu_samples(run_id, t_unix);
CREATE TABLE IF NOT EXISTS host_samples(
  run_id INTEGER NOT NULL, t_unix REAL NOT NULL,
  cpu_busy_pct REAL, core_busy_pct TEXT,
  mem_total_bytes REAL, mem_available_bytes REAL,
  psi_some_avg10 REAL, psi_some_total_us REAL,
  cpu_cores_usable INTEGER, cpu_budget_cores REAL,
  shm_total_bytes REAL, shm_used_bytes REAL
);
CREATE INDEX IF NOT EXISTS host_samples_run ON host_samples(run_id, t_unix);
CREATE TABLE IF NOT EXISTS process_samples(
  run_id INTEGER NOT NULL, t_unix REAL NOT NULL, pid INTEGER NOT NULL, ppid INTEGER,
  comm TEXT, state TEXT, cpu_pct REAL, rss_bytes REAL, threads INTEGER,
  voluntary_switches INTEGER, nonvoluntary_switches INTEGER, nonvoluntary_per_s REAL,
  read_bytes REAL, write_bytes REAL, run_delay_ms_per_s REAL, thread_names TEXT
);
CREATE INDEX IF NOT EXISTS process_samples_run ON process_samples(run_id, t_unix);
)sql";

// How long a write waits for another run's to finish (SQLite's busy timeout; kLocked says it).
constexpr int kBusyTimeoutMs = 5000;
const char* kLocked = "database is locked: another process kept writing to it for the busy timeout (5 s)";
// Ticks kept while other runs' batches hold the store: a minute of 0.1 s ticks.
constexpr size_t kMaxPendingTicks = 600;

double mono_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// -1 (and any negative) means "not available": stored as NULL.
void bind_opt(sqlite3_stmt* s, int i, double v) {
  if (v < 0) sqlite3_bind_null(s, i);
  else sqlite3_bind_double(s, i, v);
}
void bind_opt_int(sqlite3_stmt* s, int i, int64_t v) {
  if (v < 0) sqlite3_bind_null(s, i);
  else sqlite3_bind_int64(s, i, v);
}
void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
double col_opt(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_double(s, i);
}
int64_t col_opt_int(sqlite3_stmt* s, int i) {
  return sqlite3_column_type(s, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, i);
}
std::string col_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += sep;
    out += x;
  }
  return out;
}
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t pos = 0;
  for (;;) {
    size_t n = s.find(sep, pos);
    out.push_back(s.substr(pos, n == std::string::npos ? std::string::npos : n - pos));
    if (n == std::string::npos) break;
    pos = n + 1;
  }
  return out;
}

// Finalises a statement when it goes out of scope.
struct Stmt {
  sqlite3_stmt* s;
  ~Stmt() { sqlite3_finalize(s); }
  operator sqlite3_stmt*() const { return s; }
};

}  // namespace

std::string Store::default_path() {
  if (const char* h = std::getenv("TRAINSCOPE_HOME"); h && *h) return std::string(h) + "/trainscope.db";
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/trainscope/trainscope.db";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/trainscope/trainscope.db";
}

Store::Store(const std::string& path) : path_(path) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: cannot open the recording store: {}", path, msg));
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);  // another recorder may be committing to the same file
  try {
    // WAL: readers (trainscope runs, report) do not block the recorder, and a commit is
    // one append; synchronous=NORMAL keeps commits durable across a process crash.
    // Runs started at the same instant on a fresh store (a sweep's jobs) meet here: one in ~60 was
    // not stored ("database is locked"). Switching to WAL needs the file to itself for a moment, and
    // a connection that finds it busy gets SQLITE_BUSY at once, without the busy handler: retried
    // for the busy timeout. The schema goes in one IMMEDIATE transaction, whose write lock does wait:
    // as autocommit statements, a CREATE that read the file before another run's commit would fail
    // at once too (WAL's SQLITE_BUSY_SNAPSHOT: a reader turning writer on an old snapshot).
    for (const double t0 = mono_s();;) {
      if (sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_OK) break;
      if ((sqlite3_errcode(db_) & 0xff) != SQLITE_BUSY) fail(sqlite3_errmsg(db_));
      if (mono_s() - t0 > kBusyTimeoutMs / 1e3) fail(kLocked);
      usleep(10000);
    }
    exec("PRAGMA synchronous=NORMAL");
    if (!write([this] { exec(kSchema); })) fail(kLocked);
    Stmt s{prepare("SELECT value FROM meta WHERE key='schema'")};
    if (sqlite3_step(s) != SQLITE_ROW || col_text(s, 0) != "trainscope-store-1")
      fail("not a trainscope recording store (schema mismatch)");
  } catch (const UserError&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
  ins_gpu_ = prepare(
      "INSERT INTO gpu_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  ins_host_ = prepare("INSERT INTO host_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  ins_proc_ = prepare("INSERT INTO process_samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
}

Store::~Store() {
  if (!db_) return;
  try {
    flush();
  } catch (const UserError&) {  // the store stayed locked: these samples are lost, the run is not
  }
  sqlite3_finalize(ins_gpu_);
  sqlite3_finalize(ins_host_);
  sqlite3_finalize(ins_proc_);
  sqlite3_close(db_);
}

void Store::fail(const std::string& what) {
  // "file is not a database" and friends come from sqlite3_errmsg.
  throw UserError(fmt::format("{}: {}", path_, what));
}

void Store::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(msg);
  }
}

sqlite3_stmt* Store::prepare(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db_));
  return s;
}

void Store::set_max_loss(double seconds, double tick_interval_s) {
  // Margin of two ticks and 100 ms: the commit happens at a tick, and on a loaded machine
  // ticks arrive late.
  commit_after_s_ = seconds - 2 * tick_interval_s - 0.1;
  if (commit_after_s_ < 0) commit_after_s_ = 0;
}

void Store::step_done(sqlite3_stmt* s) {
  if (sqlite3_step(s) == SQLITE_DONE) {
    sqlite3_reset(s);
    return;
  }
  std::string msg = sqlite3_errmsg(db_);
  sqlite3_reset(s);  // an active statement would make the ROLLBACK/COMMIT after it fail
  fail(msg);
}

bool Store::begin_write() {
  // IMMEDIATE: the write lock is taken (or waited for) here, not by the first INSERT halfway in.
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK) return true;
  if ((sqlite3_errcode(db_) & 0xff) == SQLITE_BUSY) return false;
  fail(sqlite3_errmsg(db_));
}

void Store::rollback() noexcept { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

bool Store::write(const std::function<void()>& body) {
  if (!begin_write()) return false;
  try {
    body();
    exec("COMMIT");
  } catch (const UserError&) {
    rollback();
    throw;
  }
  return true;
}

bool Store::write_ticks() {
  if (pending_.empty()) return true;
  if (!write([this] {
        for (const auto& p : pending_) insert_tick(p.run_id, p.tick);
      }))
    return false;
  pending_.clear();
  return true;
}

void Store::flush() {
  if (!write_ticks()) fail(kLocked);
}

int64_t Store::add_run(const RunInfo& info) {
  flush();
  Stmt s{prepare(
      "INSERT INTO runs(kind, command, hostname, started_unix, interval_ms, root_pid) "
      "VALUES(?,?,?,?,?,?)")};
  std::string host = info.hostname;
  if (host.empty()) {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0) host = buf;
  }
  bind_text(s, 1, info.kind);
  bind_text(s, 2, info.command);
  bind_text(s, 3, host);
  sqlite3_bind_double(s, 4, info.started_unix);
  sqlite3_bind_double(s, 5, info.interval_ms);
  sqlite3_bind_int64(s, 6, info.root_pid);
  if (sqlite3_step(s) != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  return sqlite3_last_insert_rowid(db_);
}

void Store::finish_run(int64_t run_id, double finished_unix, int exit_code) {
  flush();
  Stmt s{prepare("UPDATE runs SET finished_unix=?, exit_code=? WHERE id=?")};
  sqlite3_bind_double(s, 1, finished_unix);
  bind_opt_int(s, 2, exit_code);
  sqlite3_bind_int64(s, 3, run_id);
  if (sqlite3_step(s) != SQLITE_DONE) fail(sqlite3_errmsg(db_));
}

void Store::put_report(int64_t run_id, const std::string& json) {
  flush();
  Stmt s{prepare("UPDATE runs SET report_json=? WHERE id=?")};
  bind_text(s, 1, json);
  sqlite3_bind_int64(s, 2, run_id);
  if (sqlite3_step(s) != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  if (sqlite3_changes(db_) == 0) fail(fmt::format("no run {} to attach a report to", run_id));
}

std::optional<std::string> Store::get_report(int64_t run_id) {
  flush();
  Stmt s{prepare("SELECT report_json FROM runs WHERE id=?")};
  sqlite3_bind_int64(s, 1, run_id);
  if (sqlite3_step(s) != SQLITE_ROW || sqlite3_column_type(s, 0) == SQLITE_NULL) return std::nullopt;
  return col_text(s, 0);
}

namespace {
const char* kRunSelect =
    "SELECT id, kind, command, hostname, started_unix, finished_unix, exit_code, interval_ms, "
    "root_pid, report_json IS NOT NULL, "
    "(SELECT count(*) FROM gpu_samples g WHERE g.run_id = runs.id), "
    "(SELECT count(*) FROM host_samples h WHERE h.run_id = runs.id), "
    "(SELECT count(*) FROM process_samples p WHERE p.run_id = runs.id) FROM runs ";

RunInfo run_row(sqlite3_stmt* s) {
  RunInfo r;
  r.id = sqlite3_column_int64(s, 0);
  r.kind = col_text(s, 1);
  r.command = col_text(s, 2);
  r.hostname = col_text(s, 3);
  r.started_unix = sqlite3_column_double(s, 4);
  r.finished_unix = col_opt(s, 5);
  r.exit_code = static_cast<int>(col_opt_int(s, 6));
  r.interval_ms = col_opt(s, 7);
  r.root_pid = sqlite3_column_int64(s, 8);
  r.has_report = sqlite3_column_int(s, 9) != 0;
  r.gpu_samples = sqlite3_column_int64(s, 10);
  r.host_samples = sqlite3_column_int64(s, 11);
  r.process_samples = sqlite3_column_int64(s, 12);
  return r;
}
}  // namespace

std::vector<RunInfo> Store::list_runs() {
  flush();
  Stmt s{prepare((std::string(kRunSelect) + "ORDER BY id DESC").c_str())};
  std::vector<RunInfo> out;
  while (sqlite3_step(s) == SQLITE_ROW) out.push_back(run_row(s));
  return out;
}

std::optional<RunInfo> Store::get_run(int64_t run_id) {
  flush();
  Stmt s{prepare((std::string(kRunSelect) + "WHERE id=?").c_str())};
  sqlite3_bind_int64(s, 1, run_id);
  if (sqlite3_step(s) != SQLITE_ROW) return std::nullopt;
  return run_row(s);
}

void Store::add_devices(int64_t run_id, const std::vector<sample::GpuInfo>& gpus,
                        const std::string& driver_version) {
  flush();
  const bool written = write([&] {
    Stmt s{prepare("INSERT OR REPLACE INTO devices VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)")};
    for (const auto& g : gpus) {
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_int(s, 2, g.index);
      bind_text(s, 3, g.name);
      bind_text(s, 4, g.uuid);
      bind_text(s, 5, g.pci_bus_id);
      bind_text(s, 6, driver_version);
      bind_opt(s, 7, g.mem_total_bytes);
      bind_opt(s, 8, g.sm_clock_max_mhz);
      bind_opt(s, 9, g.mem_clock_max_mhz);
      bind_opt_int(s, 10, g.pcie_gen_max);
      bind_opt_int(s, 11, g.pcie_width_max);
      bind_opt(s, 12, g.power_limit_w);
      sqlite3_bind_int(s, 13, g.gpm_supported);
      step_done(s);
    }
  });
  if (!written) fail(kLocked);
}

std::vector<sample::GpuInfo> Store::devices(int64_t run_id) {
  flush();
  Stmt s{prepare("SELECT gpu_idx, name, uuid, pci_bus_id, mem_total_bytes, sm_clock_max_mhz, "
                 "mem_clock_max_mhz, pcie_gen_max, pcie_width_max, power_limit_w, gpm_supported "
                 "FROM devices WHERE run_id=? ORDER BY gpu_idx")};
  sqlite3_bind_int64(s, 1, run_id);
  std::vector<sample::GpuInfo> out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    sample::GpuInfo g;
    g.index = sqlite3_column_int(s, 0);
    g.name = col_text(s, 1);
    g.uuid = col_text(s, 2);
    g.pci_bus_id = col_text(s, 3);
    g.mem_total_bytes = col_opt(s, 4);
    g.sm_clock_max_mhz = col_opt(s, 5);
    g.mem_clock_max_mhz = col_opt(s, 6);
    g.pcie_gen_max = static_cast<int>(col_opt_int(s, 7));
    g.pcie_width_max = static_cast<int>(col_opt_int(s, 8));
    g.power_limit_w = col_opt(s, 9);
    g.gpm_supported = sqlite3_column_int(s, 10) != 0;
    out.push_back(g);
  }
  return out;
}

void Store::add_tick(int64_t run_id, const sample::Tick& t) {
  if (pending_.empty()) pending_since_ = mono_s();
  pending_.push_back({run_id, t});
  if (mono_s() - pending_since_ < commit_after_s_) return;
  // Locked by another run's batch past the busy timeout: kept for the next tick, unless that has
  // gone on for a minute of ticks (then the run says so and stops recording).
  if (!write_ticks() && pending_.size() > kMaxPendingTicks) fail(kLocked);
}

void Store::insert_tick(int64_t run_id, const sample::Tick& t) {
  for (const auto& g : t.gpus) {
    sqlite3_stmt* s = ins_gpu_;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_double(s, 2, t.unix_s);
    sqlite3_bind_int(s, 3, g.index);
    sqlite3_bind_int(s, 4, g.lost);
    bind_opt(s, 5, g.util_pct);
    bind_opt(s, 6, g.mem_util_pct);
    bind_opt(s, 7, g.mem_used_bytes);
    bind_opt(s, 8, g.mem_total_bytes);
    bind_opt(s, 9, g.temp_c);
    bind_opt(s, 10, g.power_w);
    bind_opt(s, 11, g.energy_j);
    bind_opt(s, 12, g.sm_clock_mhz);
    bind_opt(s, 13, g.mem_clock_mhz);
    bind_opt_int(s, 14, g.clock_reasons);
    bind_opt_int(s, 15, g.pcie_gen);
    bind_opt_int(s, 16, g.pcie_width);
    bind_opt(s, 17, g.pcie_tx_bytes_per_s);
    bind_opt(s, 18, g.pcie_rx_bytes_per_s);
    bind_opt(s, 19, g.sm_active_pct);
    bind_opt(s, 20, g.sm_occupancy_pct);
    bind_opt(s, 21, g.tensor_active_pct);
    bind_opt(s, 22, g.dram_bw_pct);
    step_done(s);
  }
  {
    const auto& h = t.host;
    sqlite3_stmt* s = ins_host_;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_double(s, 2, t.unix_s);
    bind_opt(s, 3, h.cpu_busy_pct);
    std::string cores;
    for (double c : h.core_busy_pct) cores += (cores.empty() ? "" : ",") + fmt::format("{:.1f}", c);
    bind_text(s, 4, cores);
    bind_opt(s, 5, h.mem_total_bytes);
    bind_opt(s, 6, h.mem_available_bytes);
    bind_opt(s, 7, h.cpu_pressure.avg10);
    bind_opt(s, 8, h.cpu_pressure.total_us);
    bind_opt_int(s, 9, h.cpu_cores_usable);
    bind_opt(s, 10, h.cpu_budget_cores);
    bind_opt(s, 11, h.shm_total_bytes);
    bind_opt(s, 12, h.shm_used_bytes);
    step_done(s);
  }
  if (t.processes_fresh) {
    for (const auto& p : t.processes) {
      sqlite3_stmt* s = ins_proc_;
      sqlite3_bind_int64(s, 1, run_id);
      sqlite3_bind_double(s, 2, t.unix_s);
      sqlite3_bind_int64(s, 3, p.pid);
      sqlite3_bind_int64(s, 4, p.ppid);
      bind_text(s, 5, p.comm);
      bind_text(s, 6, std::string(1, p.state));
      bind_opt(s, 7, p.cpu_pct);
      bind_opt(s, 8, p.rss_bytes);
      sqlite3_bind_int(s, 9, p.threads);
      sqlite3_bind_int64(s, 10, static_cast<int64_t>(p.voluntary_switches));
      sqlite3_bind_int64(s, 11, static_cast<int64_t>(p.nonvoluntary_switches));
      bind_opt(s, 12, p.nonvoluntary_per_s);
      bind_opt(s, 13, p.read_bytes);
      bind_opt(s, 14, p.write_bytes);
      bind_opt(s, 15, p.run_delay_ms_per_s);
      bind_text(s, 16, join(p.thread_names, '\n'));  // thread names cannot hold '\n'
      step_done(s);
    }
  }
}

std::vector<sample::Tick> Store::ticks(int64_t run_id) {
  flush();
  std::map<double, sample::Tick> by_t;
  {
    Stmt s{prepare("SELECT t_unix, gpu_idx, lost, util_pct, mem_util_pct, mem_used_bytes, "
                   "mem_total_bytes, temp_c, power_w, energy_j, sm_clock_mhz, mem_clock_mhz, "
                   "clock_reasons, pcie_gen, pcie_width, pcie_tx_bytes_per_s, pcie_rx_bytes_per_s, "
                   "sm_active_pct, sm_occupancy_pct, tensor_active_pct, dram_bw_pct "
                   "FROM gpu_samples WHERE run_id=? ORDER BY t_unix, gpu_idx")};
    sqlite3_bind_int64(s, 1, run_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
      sample::GpuReading g;
      g.index = sqlite3_column_int(s, 1);
      g.lost = sqlite3_column_int(s, 2) != 0;
      g.util_pct = col_opt(s, 3);
      g.mem_util_pct = col_opt(s, 4);
      g.mem_used_bytes = col_opt(s, 5);
      g.mem_total_bytes = col_opt(s, 6);
      g.temp_c = col_opt(s, 7);
      g.power_w = col_opt(s, 8);
      g.energy_j = col_opt(s, 9);
      g.sm_clock_mhz = col_opt(s, 10);
      g.mem_clock_mhz = col_opt(s, 11);
      g.clock_reasons = col_opt_int(s, 12);
      g.pcie_gen = static_cast<int>(col_opt_int(s, 13));
      g.pcie_width = static_cast<int>(col_opt_int(s, 14));
      g.pcie_tx_bytes_per_s = col_opt(s, 15);
      g.pcie_rx_bytes_per_s = col_opt(s, 16);
      g.sm_active_pct = col_opt(s, 17);
      g.sm_occupancy_pct = col_opt(s, 18);
      g.tensor_active_pct = col_opt(s, 19);
      g.dram_bw_pct = col_opt(s, 20);
      by_t[sqlite3_column_double(s, 0)].gpus.push_back(std::move(g));
    }
  }
  {
    Stmt s{prepare("SELECT t_unix, cpu_busy_pct, core_busy_pct, mem_total_bytes, mem_available_bytes, "
                   "psi_some_avg10, psi_some_total_us, cpu_cores_usable, cpu_budget_cores, "
                   "shm_total_bytes, shm_used_bytes FROM host_samples WHERE run_id=? ORDER BY t_unix")};
    sqlite3_bind_int64(s, 1, run_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
      sample::HostReading& h = by_t[sqlite3_column_double(s, 0)].host;
      h.cpu_busy_pct = col_opt(s, 1);
      for (const auto& c : split(col_text(s, 2), ',')) h.core_busy_pct.push_back(std::atof(c.c_str()));
      h.mem_total_bytes = col_opt(s, 3);
      h.mem_available_bytes = col_opt(s, 4);
      h.cpu_pressure.avg10 = col_opt(s, 5);
      h.cpu_pressure.total_us = col_opt(s, 6);
      h.cpu_cores_usable = static_cast<int>(col_opt_int(s, 7));
      h.cpu_budget_cores = col_opt(s, 8);
      h.shm_total_bytes = col_opt(s, 9);
      h.shm_used_bytes = col_opt(s, 10);
    }
  }
  {
    Stmt s{prepare("SELECT t_unix, pid, ppid, comm, state, cpu_pct, rss_bytes, threads, "
                   "voluntary_switches, nonvoluntary_switches, nonvoluntary_per_s, read_bytes, "
                   "write_bytes, run_delay_ms_per_s, thread_names "
                   "FROM process_samples WHERE run_id=? ORDER BY t_unix, rowid")};
    sqlite3_bind_int64(s, 1, run_id);
    while (sqlite3_step(s) == SQLITE_ROW) {
      sample::Tick& t = by_t[sqlite3_column_double(s, 0)];
      t.processes_fresh = true;
      sample::ProcessReading p;
      p.pid = static_cast<pid_t>(sqlite3_column_int64(s, 1));
      p.ppid = static_cast<pid_t>(sqlite3_column_int64(s, 2));
      p.comm = col_text(s, 3);
      std::string st = col_text(s, 4);
      p.state = st.empty() ? '?' : st[0];
      p.cpu_pct = col_opt(s, 5);
      p.rss_bytes = col_opt(s, 6);
      p.threads = sqlite3_column_int(s, 7);
      p.voluntary_switches = static_cast<uint64_t>(sqlite3_column_int64(s, 8));
      p.nonvoluntary_switches = static_cast<uint64_t>(sqlite3_column_int64(s, 9));
      p.nonvoluntary_per_s = col_opt(s, 10);
      p.read_bytes = col_opt(s, 11);
      p.write_bytes = col_opt(s, 12);
      p.run_delay_ms_per_s = col_opt(s, 13);
      p.thread_names = split(col_text(s, 14), '\n');
      t.processes.push_back(std::move(p));
    }
  }
  std::vector<sample::Tick> out;
  double t0 = by_t.empty() ? 0 : by_t.begin()->first;
  for (auto& [ts, t] : by_t) {
    t.unix_s = ts;
    t.t_s = ts - t0;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ts::store
