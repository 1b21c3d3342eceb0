// The run layer's look at the job from outside (src/run/job_inspect.*): which processes are the
// training processes (crafted agent records), and the inspector's life cycle on real processes:
// a job that ends before it is warm, the step trigger, the time fallback, a process that exits
// in the middle of the oversubscription window, and a process that is a zombie (not yet reaped).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "run/job_inspect.h"
#include "run_test_util.h"

namespace ts::run {
namespace {

TextRecord hello(pid_t pid, const std::string& rank, pid_t ppid, bool launcher = false) {
  TextRecord t;
  t.pid = pid;
  t.kind = "hello";
  if (!rank.empty()) {
    t.kv["rank"] = rank;
    t.kv["world_size"] = "2";
  }
  t.kv["ppid"] = std::to_string(ppid);
  if (launcher) t.kv["launcher"] = "1";
  return t;
}

void add_steps(Records& r, pid_t pid, int n) {
  for (int i = 1; i <= n; ++i) {
    StepRecord s;
    s.pid = pid;
    s.step = i;
    r.steps.push_back(s);
  }
}

TEST(TrainingProcesses, TorchrunRanksNotTheLauncherNorTheirSpawnedWorkers) {
  Records r;
  r.texts.push_back(hello(99, "", 1, true));  // torchrun itself
  r.texts.push_back(hello(101, "1", 99));
  r.texts.push_back(hello(100, "0", 99));
  r.texts.push_back(hello(102, "0", 100));  // a spawn-method DataLoader worker of rank 0: inherits RANK
  add_steps(r, 100, 4);
  add_steps(r, 101, 3);
  auto p = training_processes(r, 99);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].rank, 0);
  EXPECT_EQ(p[0].pid, 100);
  EXPECT_EQ(p[0].steps, 4);
  EXPECT_EQ(p[1].rank, 1);
  EXPECT_EQ(p[1].pid, 101);
  // Before any step the worker still loses to its parent rank.
  Records early;
  early.texts.push_back(hello(102, "0", 100));
  early.texts.push_back(hello(100, "0", 99));
  auto q = training_processes(early, 99);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].pid, 100);
}

TEST(TrainingProcesses, StepsThenRoot) {
  Records r;
  r.texts.push_back(hello(200, "", 1));
  add_steps(r, 201, 2);
  add_steps(r, 200, 5);
  auto p = training_processes(r, 7);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pid, 200);  // most steps first
  EXPECT_EQ(p[1].pid, 201);
  EXPECT_EQ(p[0].rank, -1);
  auto root = training_processes(Records{}, 7);
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0].pid, 7);
}

using test::reap;
using test::spawn_sh;

// The look as the step-triggered tests take it: no time fallback, a 0.5 s window, 2 cores.
JobInspector::Config quick_look() {
  JobInspector::Config cfg;
  cfg.fallback_s = 60;
  cfg.window_s = 0.5;
  cfg.cpu_budget = 2;
  return cfg;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(JobInspector, JobEndsBeforeItIsWarm) {
  pid_t pid = spawn_sh("exec sleep 30");
  JobInspector::Config cfg;
  cfg.fallback_s = 30;
  JobInspector j(pid, [] { return Records{}; }, cfg);
  j.on_step(pid, 2);  // not warm yet
  auto t0 = std::chrono::steady_clock::now();
  JobInspection res = j.finish();
  EXPECT_LT(since(t0), 5.0);  // finish() does not wait for the fallback
  reap(pid);
  EXPECT_FALSE(res.inspected);
  EXPECT_FALSE(res.oversubscription.has_value());
  EXPECT_NE(res.skipped.find("ended before step 3"), std::string::npos) << res.skipped;
}

TEST(JobInspector, StepTriggerReadsMapsAndMeasuresTheSpinner) {
  pid_t pid = spawn_sh("while :; do :; done");  // one thread, always runnable
  Records r;
  add_steps(r, pid, 3);
  JobInspector::Config cfg = quick_look();
  JobInspector j(pid, [&r] { return r; }, cfg);
  j.on_step(pid, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  JobInspection res = j.finish();
  reap(pid);
  EXPECT_TRUE(res.inspected) << res.skipped;
  EXPECT_EQ(res.trigger, "step 3");
  ASSERT_EQ(res.processes.size(), 1u);
  EXPECT_EQ(res.processes[0].pid, pid);
  EXPECT_TRUE(res.processes[0].readable);
  EXPECT_TRUE(res.blas_libs.empty());  // /bin/sh maps no BLAS
  ASSERT_TRUE(res.oversubscription.has_value());
  EXPECT_EQ(res.oversubscription->processes, 1);
  EXPECT_EQ(res.oversubscription->cpu_budget, 2);
  EXPECT_GT(res.oversubscription->runnable_threads, 0.5);
  EXPECT_LE(res.oversubscription->runnable_threads, 1.0);
  EXPECT_FALSE(res.oversubscription->oversubscribed);

  diagnose::SamplesEvidence s;
  fill_evidence(res, s);
  EXPECT_TRUE(s.threads_measured);
  EXPECT_EQ(s.thread_budget_cores, 2);
  ASSERT_EQ(s.thread_loads.size(), 1u);
  EXPECT_EQ(s.thread_loads[0].pid, pid);
  EXPECT_EQ(s.thread_loads[0].threads, 1);
  EXPECT_FALSE(s.cpu_vendor.empty());
}

TEST(JobInspector, FallbackAfterTimeAndAProcessThatExitsMidWindow) {
  // Lives 1-2 s: the look starts at 0.2 s with a 5 s window, which ends once the process is gone
  // (here it stays a zombie until reaped: that counts as gone too).
  pid_t pid = spawn_sh("end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do :; done");
  JobInspector::Config cfg;
  cfg.fallback_s = 0.2;
  cfg.window_s = 5;
  cfg.cpu_budget = 2;
  JobInspector j(pid, [] { return Records{}; }, cfg);
  auto t0 = std::chrono::steady_clock::now();
  siginfo_t info{};
  // Wait for the exit without reaping (WNOWAIT): the process stays a zombie.
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  JobInspection res = j.finish();
  reap(pid);
  EXPECT_LT(since(t0), 4.5);
  EXPECT_NE(res.trigger.find("after 0 s"), std::string::npos) << res.trigger;
  ASSERT_TRUE(res.oversubscription.has_value());
  // The loop's `date` children may be measured beside it, each marked as its child (one that
  // exits between the listing and the first reading is not counted).
  EXPECT_GE(res.oversubscription->processes, 1);
  EXPECT_LE(res.oversubscription->processes, 1 + static_cast<int>(res.worker_of.size()));
  for (const auto& [child, parent] : res.worker_of) EXPECT_EQ(parent, pid) << child;
  EXPECT_GT(res.oversubscription->samples, 0);
  EXPECT_LT(res.oversubscription->window_s, 4.0);
}

// A DataLoader worker is a child of its training process, and NumPy's BLAS in it runs a pool of its
// own (pytorch's workers get one intra-op thread, OpenBLAS one per core): a loop whose 2 workers
// did NumPy matmuls measured 6-8x faster with OPENBLAS_NUM_THREADS=1, but the look saw the
// training process alone. Its children are measured with it, each marked as its child.
TEST(JobInspector, TheTrainingProcessesChildrenAreMeasuredAsTheirs) {
  pid_t pid = spawn_sh("(while :; do :; done) & while :; do :; done");
  Records r;
  add_steps(r, pid, 3);
  JobInspector::Config cfg = quick_look();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the child has started
  JobInspector j(pid, [&r] { return r; }, cfg);
  j.on_step(pid, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  JobInspection res = j.finish();
  std::vector<int> kids = child_processes(pid);
  for (int k : kids) kill(k, SIGKILL);
  reap(pid);
  ASSERT_EQ(kids.size(), 1u);
  ASSERT_TRUE(res.oversubscription.has_value());
  EXPECT_EQ(res.oversubscription->processes, 2);
  ASSERT_EQ(res.worker_of.size(), 1u);
  EXPECT_EQ(res.worker_of.begin()->first, kids[0]);
  EXPECT_EQ(res.worker_of.begin()->second, pid);
  EXPECT_GT(res.oversubscription->runnable_threads, 1.5);  // both spin
  diagnose::SamplesEvidence s;
  fill_evidence(res, s);
  ASSERT_EQ(s.thread_loads.size(), 2u);
  int marked = 0;
  for (const auto& t : s.thread_loads) marked += t.worker_of == pid;
  EXPECT_EQ(marked, 1);
  EXPECT_NE(host_text(res, nullptr).find("(child of " + std::to_string(pid) + ")"), std::string::npos);
}

// Hogwild's trainers (mp.Process, spawn) start one after another: the second reached step 3 a
// second after the first (pytorch/examples mnist_hogwild on 2 cores), so one look at the first
// step 3 measured one process of two and missed their 4 threads on 2 cores. The inspector looks
// again when a process warms up after its look, and keeps the look that saw both.
TEST(JobInspector, ATrainingProcessThatWarmsUpLaterIsLookedAtAgain) {
  pid_t first = spawn_sh("while :; do :; done");
  pid_t second = spawn_sh("while :; do :; done");
  std::mutex mu;
  Records r;
  add_steps(r, first, 3);
  JobInspector::Config cfg = quick_look();
  JobInspector j(first, [&] {
    std::lock_guard<std::mutex> lk(mu);
    return r;
  }, cfg);
  j.on_step(first, 3);
  j.on_step(first, 4);  // the same process again: no second look
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  {
    std::lock_guard<std::mutex> lk(mu);
    add_steps(r, second, 3);
  }
  j.on_step(second, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  JobInspection res = j.finish();
  reap(first);
  reap(second);
  ASSERT_TRUE(res.oversubscription.has_value()) << res.skipped;
  EXPECT_EQ(res.oversubscription->processes, 2);
  EXPECT_NE(res.trigger.find("started later"), std::string::npos) << res.trigger;
  ASSERT_EQ(res.processes.size(), 2u);
  EXPECT_GT(res.oversubscription->runnable_threads, 1.0);
}

}  // namespace
}  // namespace ts::run
