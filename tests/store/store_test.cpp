// SQLite and CSV round trips: what goes in comes back, "not available" stays not available.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iterator>
#include <thread>
#include <sys/wait.h>

#include "store/csv_writer.h"
#include "store/store.h"
#include "util/error.h"

using namespace ts::store;
using namespace ts::sample;
namespace fs = std::filesystem;

namespace {

struct TmpDir {
  fs::path p;
  TmpDir() {
    char t[] = "/tmp/ts_store_XXXXXX";
    p = mkdtemp(t);
  }
  ~TmpDir() { fs::remove_all(p); }
};

Tick make_tick(double unix_s, int k, bool procs) {
  Tick t;
  t.unix_s = unix_s;
  for (int i = 0; i < 2; ++i) {
    GpuReading g;
    g.index = i;
    g.util_pct = 10 * k + i;
    g.mem_util_pct = 5;
    g.mem_used_bytes = 1048576.0 * (1000 + k);
    g.mem_total_bytes = 1048576.0 * 81559;
    g.temp_c = 60 + k;
    g.power_w = 312.5;
    g.energy_j = 1234.567;
    g.sm_clock_mhz = 1980;
    g.mem_clock_mhz = 2619;
    g.clock_reasons = 0x44;
    g.pcie_gen = 5;
    g.pcie_width = 16;
    g.pcie_tx_bytes_per_s = 2 * 1048576.0;
    g.sm_active_pct = i == 0 ? 42.5 : -1;  // GPM absent on GPU 1
    g.tensor_active_pct = i == 0 ? 12.25 : -1;
    g.lost = i == 1 && k == 2;
    t.gpus.push_back(g);
  }
  t.host.cpu_busy_pct = 37.5;
  t.host.core_busy_pct = {25.0, 50.0};
  t.host.mem_total_bytes = 16e9;
  t.host.mem_available_bytes = 8e9;
  t.host.cpu_pressure.avg10 = 1.5;
  t.host.cpu_cores_usable = 2;
  t.host.cpu_budget_cores = 1.5;
  t.host.shm_total_bytes = 64.0 * 1048576;
  t.host.shm_used_bytes = 3.0 * 1048576;
  if (procs) {
    t.processes_fresh = true;
    ProcessReading p;
    p.pid = 100;
    p.ppid = 1;
    p.comm = "python3 (main), x";
    p.state = 'R';
    p.cpu_pct = 95.5;
    p.sys_pct = 40.25;
    p.minflt_per_s = 123456;
    p.rss_bytes = 2e9;
    p.threads = 17;
    p.nonvoluntary_switches = 300;
    p.nonvoluntary_per_s = 12;
    p.thread_names = {"pt_autograd_0", "pt_main_thread"};
    t.processes.push_back(p);
    p.pid = 101;
    p.comm = "pt_data_worker";
    p.cpu_pct = p.sys_pct = p.minflt_per_s = -1;
    p.thread_names.clear();
    t.processes.push_back(p);
  }
  return t;
}

}  // namespace

TEST(Store, RoundTripManyRunsInOneFile) {
  TmpDir d;
  const std::string db = (d.p / "sub" / "trainscope.db").string();  // folder created
  int64_t r1, r2;
  {
    Store s(db);
    RunInfo info;
    info.kind = "watch";
    info.command = "trainscope watch";
    info.started_unix = 1700000000.5;
    info.interval_ms = 100;
    info.root_pid = 100;
    r1 = s.add_run(info);
    GpuInfo gi;
    gi.index = 0;
    gi.name = "NVIDIA H100 80GB HBM3";
    gi.uuid = "GPU-abc";
    gi.mem_total_bytes = 85e9;
    gi.gpm_supported = true;
    s.add_devices(r1, {gi}, "550.54.15");
    for (int k = 0; k < 3; ++k) s.add_tick(r1, make_tick(1700000001.0 + k * 0.1, k, k != 1));
    s.finish_run(r1, 1700000002.0, 0);
    info.kind = "run";
    info.command = "python3 train.py";
    r2 = s.add_run(info);
    s.add_tick(r2, make_tick(1700000100.0, 9, false));
    s.put_report(r2, R"({"findings":[]})");
  }
  Store s(db);
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, r2);  // newest first
  EXPECT_TRUE(runs[0].has_report);
  EXPECT_EQ(runs[0].finished_unix, -1);  // never finished
  EXPECT_EQ(runs[1].kind, "watch");
  EXPECT_EQ(runs[1].exit_code, 0);
  EXPECT_EQ(runs[1].gpu_samples, 6);
  EXPECT_EQ(runs[1].host_samples, 3);
  EXPECT_EQ(runs[1].process_samples, 4);
  EXPECT_EQ(*s.get_report(r2), R"({"findings":[]})");
  EXPECT_FALSE(s.get_report(r1));
  EXPECT_FALSE(s.get_run(999));
  EXPECT_EQ(s.get_run(r1)->command, "trainscope watch");
  auto devs = s.devices(r1);
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(devs[0].gpm_supported);
  EXPECT_EQ(devs[0].pcie_gen_max, -1);

  auto ticks = s.ticks(r1);
  ASSERT_EQ(ticks.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    Tick want = make_tick(1700000001.0 + k * 0.1, k, k != 1);
    const Tick& got = ticks[k];
    EXPECT_DOUBLE_EQ(got.unix_s, want.unix_s);
    ASSERT_EQ(got.gpus.size(), 2u);
    for (int i = 0; i < 2; ++i) {
      const auto &g = got.gpus[i], &w = want.gpus[i];
      EXPECT_EQ(g.util_pct, w.util_pct);
      EXPECT_EQ(g.mem_used_bytes, w.mem_used_bytes);
      EXPECT_EQ(g.temp_c, w.temp_c);
      EXPECT_EQ(g.power_w, w.power_w);
      EXPECT_EQ(g.energy_j, w.energy_j);
      EXPECT_EQ(g.clock_reasons, w.clock_reasons);
      EXPECT_EQ(g.pcie_width, w.pcie_width);
      EXPECT_EQ(g.sm_active_pct, w.sm_active_pct);
      EXPECT_EQ(g.tensor_active_pct, w.tensor_active_pct);
      EXPECT_EQ(g.dram_bw_pct, -1);
      EXPECT_EQ(g.lost, w.lost);
    }
    EXPECT_EQ(got.host.cpu_busy_pct, 37.5);
    EXPECT_EQ(got.host.core_busy_pct, (std::vector<double>{25.0, 50.0}));
    EXPECT_EQ(got.host.cpu_budget_cores, 1.5);
    EXPECT_EQ(got.host.shm_used_bytes, 3.0 * 1048576);
    EXPECT_EQ(got.processes_fresh, k != 1);
    ASSERT_EQ(got.processes.size(), k != 1 ? 2u : 0u);
    if (k != 1) {
      EXPECT_EQ(got.processes[0].comm, "python3 (main), x");
      EXPECT_EQ(got.processes[0].state, 'R');
      EXPECT_EQ(got.processes[0].cpu_pct, 95.5);
      EXPECT_EQ(got.processes[0].thread_names, want.processes[0].thread_names);
      EXPECT_EQ(got.processes[1].cpu_pct, -1);
      EXPECT_TRUE(got.processes[1].thread_names.empty());
    }
  }
}

// Runs side by side in one store (jobs started at once, each `trainscope run` recording): three
// processes commit a batch at every tick, a tick every 2 ms for 2 s, and each keeps every tick and
// its report.
TEST(Store, RunsSideBySideEachKeepEveryTick) {
  TmpDir d;
  const std::string db = (d.p / "trainscope.db").string();
  Store(db).list_runs();  // the schema, made once
  constexpr int kTicks = 1000;
  auto one_run = [&](const std::string& name) {
    Store s(db);
    s.set_max_loss(0.1, 0.1);  // a batch a tick: the most commits, the most chances to meet
    RunInfo info;
    info.kind = "run";
    info.command = name;
    info.started_unix = 1700000000;
    int64_t id = s.add_run(info);
    s.add_devices(id, {}, "");
    for (int k = 0; k < kTicks; ++k) {
      s.add_tick(id, make_tick(1700000000 + k * 0.002, k % 3, k % 4 == 0));
      usleep(2000);
    }
    s.finish_run(id, 1700000002, 0);
    s.put_report(id, "{\"run\": \"" + name + "\"}");
  };
  // Processes, as trainscope runs are: each child writes its error, if any, to a file.
  const std::vector<std::string> names = {"a", "b", "c"};
  std::vector<pid_t> kids;
  for (const auto& name : names) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string error;
      try {
        one_run(name);
      } catch (const std::exception& e) {
        error = e.what();
      }
      std::ofstream((d.p / (name + ".err")).string()) << error;
      _exit(error.empty() ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  for (const auto& name : names) {
    std::ifstream f((d.p / (name + ".err")).string());
    std::string err((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(err, "") << "run " << name;
  }
  Store s(db);
  auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), names.size());
  for (const auto& r : runs) {
    EXPECT_EQ(s.ticks(r.id).size(), static_cast<size_t>(kTicks)) << "run " << r.command;
    EXPECT_TRUE(s.get_report(r.id).has_value()) << "run " << r.command;
  }
}

// A store that does not exist yet, opened by several runs at the same instant (a sweep's jobs, or
// compare's gate test making three runs at once on a fresh home): each creates the schema. In WAL
// mode a statement that read the file and then writes, after another connection committed, gets
// "database is locked" at once, without the busy timeout (SQLite's docs: SQLITE_BUSY_SNAPSHOT), so
// one run in ~60 went unstored ("run not stored: ... database is locked"). Four processes that
// open a fresh store together, thirty times: every open succeeds.
TEST(Store, ANewStoreOpenedByRunsAtOnceOpensForEach) {
  constexpr int kRounds = 30, kRuns = 4;
  for (int round = 0; round < kRounds; ++round) {
    TmpDir d;
    const std::string db = (d.p / "trainscope.db").string();
    const auto start = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
    std::vector<pid_t> kids;
    for (int k = 0; k < kRuns; ++k) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        while (std::chrono::steady_clock::now() < start) {
        }
        std::string error;
        try {
          Store s(db);
          RunInfo info;
          info.kind = "run";
          info.started_unix = 1700000000;
          s.add_run(info);
        } catch (const std::exception& e) {
          error = e.what();
        }
        if (!error.empty()) std::ofstream((d.p / (std::to_string(k) + ".err")).string()) << error;
        _exit(error.empty() ? 0 : 1);
      }
      kids.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : kids) {
      int st = 0;
      ASSERT_EQ(waitpid(pid, &st, 0), pid);
      failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (int k = 0; k < kRuns; ++k) {
      std::ifstream f((d.p / (std::to_string(k) + ".err")).string());
      if (f) ADD_FAILURE() << "round " << round << ", run " << k << ": " << std::string(
                                  (std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    }
    ASSERT_EQ(failed, 0) << "round " << round;
    EXPECT_EQ(Store(db).list_runs().size(), static_cast<size_t>(kRuns));
  }
}

// A batch of samples that finds the store locked past the busy timeout (another run's writer): it
// was a transaction opened at the batch's first INSERT; that INSERT failed "database is locked",
// the sampler thread dropped the error and stopped recording, and the INSERT, left active, made
// the run's last COMMIT fail ("cannot commit transaction - SQL statements in progress"): the run
// exited 1 without its report (seen with compare's gate test making three runs at once). Now the
// batch stays in memory and goes out with the next tick's.
TEST(Store, ABatchThatMeetsALockedStoreIsKeptForTheNextTick) {
  TmpDir d;
  const std::string db = (d.p / "trainscope.db").string();
  Store s(db);
  s.set_max_loss(0.1, 0.1);  // every tick written at once
  RunInfo info;
  info.kind = "run";
  info.command = "held";
  info.started_unix = 1700000000;
  const int64_t id = s.add_run(info);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread release([other] {
    usleep(5500 * 1000);  // past the store's 5 s busy timeout
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  EXPECT_NO_THROW(s.add_tick(id, make_tick(1700000000, 0, true)));  // waits 5 s, keeps the batch
  release.join();
  sqlite3_close(other);
  EXPECT_NO_THROW(s.add_tick(id, make_tick(1700000000.1, 1, false)));
  EXPECT_NO_THROW(s.finish_run(id, 1700000001, 0));
  EXPECT_NO_THROW(s.put_report(id, "{}"));
  EXPECT_EQ(s.ticks(id).size(), 2u);
}

TEST(Store, NotAStoreIsOneClearError) {
  TmpDir d;
  const std::string bad = (d.p / "bad.db").string();
  std::ofstream(bad) << "this is not sqlite, just text that is long enough to have a header....";
  try {
    Store s(bad);
    FAIL() << "opened a non-database";
  } catch (const ts::UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": ", 0), 0u) << e.what();
  }
  EXPECT_THROW(Store("/proc/version/x.db"), ts::UserError);
}

TEST(Store, DefaultPathHonoursTrainscopeHome) {
  setenv("TRAINSCOPE_HOME", "/tmp/tshome", 1);
  EXPECT_EQ(Store::default_path(), "/tmp/tshome/trainscope.db");
  unsetenv("TRAINSCOPE_HOME");
  setenv("XDG_DATA_HOME", "", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(Store::default_path(), "/home/u/.local/share/trainscope/trainscope.db");
}

TEST(Csv, RoundTripSeedColumnsFirst) {
  TmpDir d;
  const std::string path = (d.p / "s.csv").string();
  {
    CsvWriter w(path);
    w.write(make_tick(1700000001.25, 3, true));
    Tick host_only = make_tick(1700000001.35, 0, false);
    host_only.gpus.clear();
    w.write(host_only);
  }
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4u);  // header, 2 GPU rows, 1 host row
  const auto& cols = CsvWriter::columns();
  ASSERT_EQ(rows[0], cols);
  EXPECT_EQ((std::vector<std::string>(cols.begin(), cols.begin() + 7)),
            (std::vector<std::string>{"timestamp", "gpu_idx", "util_pct", "mem_used_mib", "mem_total_mib",
                                      "temp_c", "power_w"}));
  for (size_t r = 1; r < rows.size(); ++r) EXPECT_EQ(rows[r].size(), cols.size()) << r;
  auto at = [&](size_t r, const char* name) {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return rows[r][i];
    return std::string("?");
  };
  EXPECT_EQ(at(1, "timestamp"), "2023-11-14T22:13:21.250Z");
  EXPECT_EQ(at(2, "gpu_idx"), "1");
  EXPECT_EQ(at(2, "util_pct"), "31");
  EXPECT_EQ(at(1, "mem_used_mib"), "1003");
  EXPECT_EQ(at(1, "mem_total_mib"), "81559");
  EXPECT_EQ(at(1, "temp_c"), "63");
  EXPECT_EQ(at(1, "power_w"), "312.50");
  EXPECT_EQ(at(1, "sm_active_pct"), "42.50");
  EXPECT_EQ(at(2, "sm_active_pct"), "");  // not available
  EXPECT_EQ(at(1, "clock_reasons"), "0x44");
  EXPECT_EQ(at(1, "pcie_tx_mib_s"), "2");
  EXPECT_EQ(at(1, "tree_processes"), "2");
  EXPECT_EQ(at(1, "tree_cpu_pct"), "95.5");
  EXPECT_EQ(at(1, "tree_threads"), "34");
  EXPECT_EQ(at(1, "tree_sys_pct"), "40.2");  // the second process has none: the first's alone
  EXPECT_EQ(at(1, "tree_minflt_per_s"), "123456");
  EXPECT_EQ(at(3, "gpu_idx"), "");
  EXPECT_EQ(at(3, "util_pct"), "");
  EXPECT_EQ(at(3, "host_cpu_pct"), "37.5");
  EXPECT_EQ(at(3, "shm_used_mib"), "3");
  EXPECT_THROW(CsvWriter("/nonexistent/dir/x.csv"), ts::UserError);
}
