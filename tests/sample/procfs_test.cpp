// /proc parsing: crafted files (odd comm names, 0-length files, a process that exits between
// two reads) and the live system.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "sample/cpu_budget.h"
#include "sample/host_sampler.h"
#include "sample/process_tree.h"
#include "sample/procfs.h"

using namespace ts::sample;
namespace fs = std::filesystem;

namespace {

// A crafted /proc tree in a temporary directory.
struct FakeProc {
  fs::path root;
  FakeProc() {
    char tmpl[] = "/tmp/ts_fakeproc_XXXXXX";
    root = mkdtemp(tmpl);
  }
  ~FakeProc() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) {
    fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A /proc/PID/stat line with the fields trainscope reads.
  // cutime, cstime and cminflt: the children it has reaped.
  static std::string stat_line(int pid, const std::string& comm, int ppid, int utime, int stime,
                               int threads, int start, int rss, int minflt = 0, int cutime = 0, int cstime = 0,
                               int cminflt = 0) {
    std::string s = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid);
    for (int f = 5; f <= 13; ++f)  // field 10: minor faults, 11: its reaped children's
      s += " " + std::to_string(f == 10 ? minflt : f == 11 ? cminflt : 0);
    s += " " + std::to_string(utime) + " " + std::to_string(stime);
    s += " " + std::to_string(cutime) + " " + std::to_string(cstime) + " 0 0";
    s += " " + std::to_string(threads) + " 0 " + std::to_string(start) + " 0 " + std::to_string(rss);
    for (int f = 25; f <= 38; ++f) s += " 0";
    s += " 3 0 0\n";  // field 39: last CPU = 3
    return s;
  }
};

}  // namespace

TEST(Procfs, StatCommWithSpacesAndParentheses) {
  std::string line = FakeProc::stat_line(77, "evil) (name) x", 1, 250, 50, 9, 12345, 1000, 4321);
  auto s = procfs::parse_pid_stat(line);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 77);
  EXPECT_EQ(s->comm, "evil) (name) x");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 1);
  EXPECT_EQ(s->utime, 250u);
  EXPECT_EQ(s->stime, 50u);
  EXPECT_EQ(s->minflt, 4321u);
  EXPECT_EQ(s->num_threads, 9);
  EXPECT_EQ(s->starttime, 12345u);
  EXPECT_EQ(s->rss_pages, 1000);
  EXPECT_EQ(s->last_cpu, 3);
}

TEST(Procfs, EmptyAndTruncatedInputsAreRejectedNotCrashed) {
  EXPECT_FALSE(procfs::parse_pid_stat(""));
  EXPECT_FALSE(procfs::parse_pid_stat("12 (x"));
  EXPECT_FALSE(procfs::parse_pid_stat("12 (x) S 1 2 3"));
  EXPECT_TRUE(procfs::parse_stat("").empty());
  EXPECT_EQ(procfs::parse_pid_status("").threads, 0);
  EXPECT_EQ(procfs::parse_pid_io("").read_bytes, -1);
  EXPECT_FALSE(procfs::parse_schedstat("").ok);
  EXPECT_EQ(procfs::parse_meminfo("").total_bytes, -1);
  EXPECT_EQ(procfs::parse_vmstat_oom_kills(""), -1);
  EXPECT_EQ(procfs::parse_pressure("").avg10, -1);
  EXPECT_EQ(procfs::parse_cpu_max(""), -1);
  EXPECT_EQ(procfs::count_cpu_list(""), 0);
}

TEST(Procfs, ZeroLengthFileReadsAsEmpty) {
  FakeProc fp;
  fp.write("empty", "");
  std::string out = "junk";
  EXPECT_TRUE(procfs::read_text((fp.root / "empty").string(), out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(procfs::read_text((fp.root / "missing").string(), out));
}

TEST(Procfs, StatCpuLines) {
  auto c = procfs::parse_stat(
      "cpu  100 0 50 800 50 0 0 0 0 0\n"
      "cpu0 60 0 20 400 20 0 0 0 0 0\n"
      "cpu1 40 0 30 400 30 0 0 0 0 0\n"
      "intr 1 2 3\nctxt 99\n");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].core, -1);
  EXPECT_EQ(c[0].total, 1000u);
  EXPECT_EQ(c[0].busy, 150u);  // total - idle - iowait
  EXPECT_EQ(c[2].core, 1);
  EXPECT_EQ(c[2].busy, 70u);
}

TEST(Procfs, StatusIoSchedstatMeminfoPressure) {
  auto st = procfs::parse_pid_status(
      "Name:\tpt_main_thread\nThreads:\t17\nCpus_allowed_list:\t0-3,8\n"
      "voluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t45\n");
  EXPECT_EQ(st.threads, 17);
  EXPECT_EQ(st.voluntary_switches, 120u);
  EXPECT_EQ(st.nonvoluntary_switches, 45u);
  EXPECT_EQ(procfs::count_cpu_list(st.cpus_allowed_list), 5);
  auto io = procfs::parse_pid_io("rchar: 5\nwchar: 6\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n");
  EXPECT_EQ(io.read_bytes, 4096);
  EXPECT_EQ(io.write_bytes, 8192);
  auto ss = procfs::parse_schedstat("123456789 5000000 42\n");
  EXPECT_TRUE(ss.ok);
  EXPECT_EQ(ss.on_cpu_ns, 123456789u);
  EXPECT_EQ(ss.wait_ns, 5000000u);
  // oom_kill, not its neighbours (oom_kill_ is no line of Linux's, but a prefix must not match).
  EXPECT_EQ(procfs::parse_vmstat_oom_kills("pgfault 123\noom_kill_x 9\noom_kill 7\nnuma_hit 1\n"), 7);
  EXPECT_EQ(procfs::parse_vmstat_oom_kills("pgfault 123\n"), -1);
  auto m = procfs::parse_meminfo("MemTotal:       16384 kB\nMemFree:  1 kB\nMemAvailable:    8192 kB\n");
  EXPECT_EQ(m.total_bytes, 16384.0 * 1024);
  EXPECT_EQ(m.available_bytes, 8192.0 * 1024);
  auto p = procfs::parse_pressure("some avg10=1.50 avg60=2.25 avg300=0.00 total=987654\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  EXPECT_DOUBLE_EQ(p.avg10, 1.5);
  EXPECT_DOUBLE_EQ(p.avg60, 2.25);
  EXPECT_DOUBLE_EQ(p.total_us, 987654);
  EXPECT_EQ(procfs::parse_cpu_max("max 100000\n"), -1);
  EXPECT_DOUBLE_EQ(procfs::parse_cpu_max("250000 100000\n"), 2.5);
  EXPECT_EQ(procfs::parse_children("12 13 99 "), (std::vector<pid_t>{12, 13, 99}));
}

TEST(Procfs, CraftedTreeCpuRatesAndExitBetweenReads) {
  FakeProc fp;
  // root 10 -> children 11 ("pt_data_worker"), 12 ("a (b) c"); 12 -> 13.
  fp.write("10/stat", FakeProc::stat_line(10, "python3", 1, 100, 0, 20, 500, 100));
  fp.write("11/stat", FakeProc::stat_line(11, "pt_data_worker", 10, 10, 0, 1, 600, 10));
  fp.write("12/stat", FakeProc::stat_line(12, "a (b) c", 10, 0, 0, 1, 601, 10));
  fp.write("13/stat", FakeProc::stat_line(13, "grandchild", 12, 0, 0, 1, 602, 10));
  fp.write("14/stat", FakeProc::stat_line(14, "unrelated", 1, 0, 0, 1, 603, 10));
  fp.write("10/status", "Threads:\t20\nnonvoluntary_ctxt_switches:\t100\n");
  fp.write("10/io", "");  // 0-length (no permission on a real system reads the same way)
  fp.write("10/task/10/comm", "pt_main_thread\n");
  fp.write("10/task/11/comm", "pt_autograd_0\n");
  fp.write("10/task/12/comm", "pt_main_thread\n");
  // No children files: the scan fallback finds the tree from parent links.
  auto tree = process_tree(10, fp.root.string());
  EXPECT_EQ(tree, (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(process_tree_by_scan(10, fp.root.string()), tree);

  HostSampler hs(fp.root.string(), "", 10);
  auto a = hs.read_tree(1.0);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[2].comm, "a (b) c");
  EXPECT_EQ(a[0].cpu_pct, -1);  // first reading: no rate yet
  EXPECT_EQ(a[0].thread_names, (std::vector<std::string>{"pt_autograd_0", "pt_main_thread"}));
  EXPECT_EQ(a[0].read_bytes, -1);
  // One second later: root used 50 more ticks (0.5 s of CPU, a fifth of a second of it in the
  // kernel) and took 25,000 minor faults, 13 exited, 12 is a new process that reused the PID
  // (different starttime): no bogus rate for it.
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  fp.write("10/stat", FakeProc::stat_line(10, "python3", 1, 100 + static_cast<int>(hz / 2) - static_cast<int>(hz / 5),
                                          static_cast<int>(hz / 5), 20, 500, 100, 25000));
  fp.write("10/status", "Threads:\t20\nnonvoluntary_ctxt_switches:\t160\n");
  fp.write("12/stat", FakeProc::stat_line(12, "reused", 10, 7, 0, 1, 9999, 10));
  fs::remove_all(fp.root / "13");
  auto b = hs.read_tree(2.0);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_NEAR(b[0].cpu_pct, 50.0, 1e-9);
  EXPECT_NEAR(b[0].sys_pct, 100.0 * static_cast<int>(hz / 5) / hz, 1e-9);
  EXPECT_NEAR(b[0].minflt_per_s, 25000.0, 1e-9);
  EXPECT_NEAR(b[0].nonvoluntary_per_s, 60.0, 1e-9);
  EXPECT_EQ(b[2].comm, "reused");
  EXPECT_EQ(b[2].cpu_pct, -1);
  // A process whose directory vanishes between the tree walk and the read is skipped.
  ProcessReading pr;
  EXPECT_FALSE(hs.read_process(13, 3.0, true, pr));
}

// DataLoader workers that live a second per epoch: a reading every half second saw little of
// their CPU (the job's own workers counted as "other processes" busy on the host). A worker born
// since the previous reading counts everything since its start, and one that exited meanwhile
// leaves the rest of its CPU in its parent's reaped-children totals (cutime, cstime, cminflt).
TEST(Procfs, WorkersBornAndReapedBetweenReadingsKeepTheirCpuInTheTree) {
  FakeProc fp;
  const int hz = static_cast<int>(sysconf(_SC_CLK_TCK));
  // Boot clock 100 s; the root started at 50 s, worker 11 at 99 s.
  fp.write("uptime", "100.00 180.00\n");
  fp.write("10/stat", FakeProc::stat_line(10, "python3", 1, 10 * hz, 0, 20, 50 * hz, 100));
  fp.write("11/stat", FakeProc::stat_line(11, "pt_data_worker", 10, hz / 2, 0, 1, 99 * hz, 10, 100));
  HostSampler hs(fp.root.string(), "", 10);
  auto a = hs.read_tree(1.0);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].cpu_pct, -1);  // seen at the first reading: its CPU before it is not this run's
  // One second later (boot 101 s): the root used half a core; worker 11 used 0.3 s more of CPU
  // (all of its 0.2 s in the kernel) and exited, reaped by the root, whose children totals rose by its whole
  // life: 0.8 s (0.6 s in user space, 0.2 s in the kernel) and 500 faults; worker 12 was born at 100.5 s and
  // used 0.4 s.
  fp.write("uptime", "101.00 181.00\n");
  fp.write("10/stat", FakeProc::stat_line(10, "python3", 1, 10 * hz + hz / 2, 0, 20, 50 * hz, 100, 0,
                                          6 * hz / 10, 2 * hz / 10, 500));
  fs::remove_all(fp.root / "11");
  fp.write("12/stat", FakeProc::stat_line(12, "pt_data_worker", 10, 4 * hz / 10, 0, 1, 100 * hz + hz / 2, 10, 40));
  auto b = hs.read_tree(2.0);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].pid, 12);
  EXPECT_NEAR(b[1].cpu_pct, 40.0, 1e-9);  // all of it since its start
  EXPECT_NEAR(b[1].minflt_per_s, 40.0, 1e-9);
  // The root: its own 50%, and the 30% of worker 11's life after its last reading.
  EXPECT_NEAR(b[0].cpu_pct, 80.0, 1e-9);
  EXPECT_NEAR(b[0].sys_pct, 20.0, 1e-9);  // 0.2 s in the kernel, none of it read before
  EXPECT_NEAR(b[0].minflt_per_s, 400.0, 1e-9);  // 500 faults, 100 of them seen in its own reading
  // A third reading with nothing new: no double count of what was reaped.
  fp.write("uptime", "102.00 182.00\n");
  auto c = hs.read_tree(3.0);
  EXPECT_NEAR(c[0].cpu_pct, 0.0, 1e-9);
  EXPECT_NEAR(c[1].cpu_pct, 0.0, 1e-9);
}

TEST(Procfs, CgroupBudgetV1AndV2) {
  FakeProc fp;
  fp.write("proc/50/status", "Cpus_allowed_list:\t0-7\n");
  fp.write("proc/50/cgroup", "0::/job/step\n");
  fp.write("cg/job/cpu.max", "300000 100000\n");
  fp.write("cg/job/step/cpu.max", "max 100000\n");
  auto b = read_cpu_budget(50, (fp.root / "proc").string(), (fp.root / "cg").string());
  EXPECT_EQ(b.cores_usable, 8);
  EXPECT_DOUBLE_EQ(b.quota_cores, 3.0);
  EXPECT_DOUBLE_EQ(b.budget_cores, 3.0);

  fp.write("proc/51/status", "Cpus_allowed_list:\t0-1\n");
  fp.write("proc/51/cgroup", "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n");
  fp.write("cg/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n");
  fp.write("cg/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  b = read_cpu_budget(51, (fp.root / "proc").string(), (fp.root / "cg").string());
  EXPECT_EQ(b.cores_usable, 2);
  EXPECT_DOUBLE_EQ(b.quota_cores, 4.0);
  EXPECT_DOUBLE_EQ(b.budget_cores, 2.0);  // the affinity mask is tighter
}

// Linux 4.13 on counts the OOM killer's kills in /proc/vmstat (`trainscope run` reads it around
// the job: a SIGKILL with the count risen is the OOM killer's).
TEST(ProcfsLive, TheOomKillCounterIsRead) { EXPECT_GE(procfs::read_oom_kills(), 0); }

TEST(ProcfsLive, OwnProcessAndForkedChildren) {
  // Three children that burn CPU (one of them with a grandchild), named through prctl.
  std::vector<pid_t> kids;
  for (int i = 0; i < 3; ++i) {
    pid_t k = fork();
    if (k == 0) {
      prctl(PR_SET_NAME, i == 0 ? "ts worker (0)" : "ts_worker");
      if (i == 1 && fork() == 0) {
        pause();
        _exit(0);
      }
      volatile unsigned long x = 0;
      for (;;) x = x + 1;
    }
    kids.push_back(k);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  HostSampler hs("/proc", "/dev/shm", getpid());
  hs.read_tree(0.0);
  HostReading h0;
  hs.read_cpu(h0);
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto procs = hs.read_tree(dt);
  HostReading h;
  hs.read_cpu(h);
  hs.read_slow(h);
  for (pid_t k : kids) kill(k, SIGKILL);
  // The grandchild of kid 1 is reparented to init when kid 1 dies; kill the group's leftovers.
  for (const auto& p : procs)
    if (p.pid != getpid()) kill(p.pid, SIGKILL);
  for (pid_t k : kids) waitpid(k, nullptr, 0);

  ASSERT_EQ(procs.size(), 5u);  // us, 3 kids, 1 grandchild
  EXPECT_EQ(procs[0].pid, getpid());
  EXPECT_EQ(procs[1].comm, "ts worker (0)");
  double kids_cpu = 0;
  for (size_t i = 1; i < 4; ++i) kids_cpu += procs[i].cpu_pct;
  // Three spinning children on a shared (possibly saturated) machine: some CPU, at most all
  // cores. The exact arithmetic is checked on crafted files above.
  EXPECT_GT(kids_cpu, 1.0);
  EXPECT_LE(kids_cpu, 100.0 * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)) + 20);
  EXPECT_EQ(h.core_busy_pct.size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GT(h.cpu_busy_pct, 1.0);
  EXPECT_GT(h.mem_total_bytes, 0);
  EXPECT_GT(h.shm_total_bytes, 0);
  EXPECT_GE(h.cpu_cores_usable, 1);
  EXPECT_GT(procs[0].rss_bytes, 0);
  EXPECT_FALSE(procs[0].thread_names.empty());
}

// The same on the live system: a child started and reaped between two readings, burning CPU for
// 0.3 s of its life, is in the tree's CPU of the second.
TEST(ProcfsLive, AChildBornAndReapedBetweenReadingsIsCounted) {
  HostSampler hs("/proc", "/dev/shm", getpid());
  hs.read_tree(0.0);
  auto t0 = std::chrono::steady_clock::now();
  pid_t k = fork();
  if (k == 0) {
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    volatile unsigned long x = 0;
    do {
      for (int i = 0; i < 100000; ++i) x = x + 1;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < 0.3);
    _exit(0);
  }
  waitpid(k, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto procs = hs.read_tree(dt);
  ASSERT_FALSE(procs.empty());
  // The child's 0.3 s (ticks of 10 ms, so 0.28 s at least) over the interval, in our reading.
  EXPECT_GE(procs[0].cpu_pct, 100.0 * 0.28 / dt);
}
