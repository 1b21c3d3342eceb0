// Job directories (`trainscope run --job-dir`, `trainscope report DIR`) on hand-built input: the
// launcher's options and the environment -> the job's identity and node rank; node folders that
// never collide; the manifest's round trip; and the merge on job directories made to be wrong in
// each way a real one is (a node missing, still running or dead, two jobs mixed, a cut-off write,
// clocks that disagree), where every problem is one line and what is there is still reported.
// The real two-node job is tests/fleet/two_nodes_test.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "run/job_merge.h"
#include "util/error.h"
#include "run/job_node.h"
#include "run/job_report.h"
#include "run/node_manifest.h"

namespace fs = std::filesystem;
using namespace ts::run;

namespace {

EnvGetter env_of(std::map<std::string, std::string> m) {
  return [m](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string() : it->second;
  };
}

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/ts_jobdir_XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A node of a 2-node x 2-rank job: every rank busy `busy` ms per step outside sync, `wait` ms of
// data wait; the step ends of steps 5 and 10 at t0 + step x 0.1 s (+ `clock` s: its clock's error).
NodeManifest node(int node_rank, double busy_ms, double data_ms, double clock_s = 0, const std::string& port = "29500") {
  NodeManifest m;
  m.state = "finished";
  m.host = "host" + std::to_string(node_rank);
  m.node = m.host + "-node" + std::to_string(node_rank);
  m.node_rank = node_rank;
  m.job.master_addr = "10.0.0.1";
  m.job.master_port = port;
  m.job.nnodes = 2;
  m.world_size = 4;
  m.local_world_size = 2;
  m.started_unix = 1'700'000'000;
  m.updated_unix = m.ended_unix = 1'700'000'100;
  m.torch_version = "2.3.0";
  m.cpu_budget_cores = 8;
  for (int l = 0; l < 2; ++l) {
    NodeRank r;
    r.rank = node_rank * 2 + l;
    r.local_rank = l;
    r.steps = 30;
    r.data_wait_ms = data_ms;
    r.nonsync_ms = busy_ms;
    r.sync_ms = 5;
    r.step_ms = 100;
    r.step_ends = {{5, 1'700'000'000.5 + clock_s}, {10, 1'700'000'001.0 + clock_s}};
    m.ranks.push_back(r);
  }
  return m;
}

void put(const std::string& job, const NodeManifest& m) {
  fs::create_directories(fs::path(job) / m.node);
  std::ofstream(fs::path(job) / m.node / "node.json") << node_manifest_json(m);
}

bool has(const JobView& v, const std::string& text) {
  for (const auto& p : v.problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

const ts::diagnose::Finding* finding(const JobView& v, const std::string& id) {
  for (const auto& f : v.diagnosis.findings)
    if (f.id == id) return &f;
  return nullptr;
}

constexpr double kNow = 1'700'000'200;

}  // namespace

TEST(LauncherArgs, ReadsTorchrunOptionsUpToTheScript) {
  auto a = parse_launcher_args({"torchrun", "--nnodes=2", "--nproc-per-node", "8", "--node_rank", "1", "--rdzv-id", "job7",
                                "--rdzv_endpoint", "n0:29400", "train.py", "--node-rank", "5"});
  EXPECT_TRUE(a.torchrun);
  EXPECT_EQ(a.nnodes, "2");
  EXPECT_EQ(a.node_rank, "1");  // the script's own --node-rank is not the launcher's
  EXPECT_EQ(a.rdzv_id, "job7");
  EXPECT_EQ(a.rdzv_endpoint, "n0:29400");
  auto m = parse_launcher_args({"python3", "-m", "torch.distributed.run", "--standalone", "--master_port", "29611", "t.py"});
  EXPECT_TRUE(m.torchrun);
  EXPECT_EQ(m.master_port, "29611");
  EXPECT_FALSE(parse_launcher_args({"python", "train.py", "--nnodes", "4"}).torchrun);
}

TEST(NodeStart, SlurmThenTorchrunThenEnvironment) {
  auto s = node_start({"torchrun", "--nnodes", "1:4", "--node-rank", "2", "t.py"}, -1,
                      env_of({{"SLURM_JOB_ID", "991"}, {"SLURM_NODEID", "3"}}));
  EXPECT_EQ(s.node_rank, 3);
  EXPECT_EQ(s.node_rank_source, "SLURM_NODEID");
  EXPECT_EQ(s.job.key(), "slurm:991");
  EXPECT_EQ(s.job.nnodes, 4);  // elastic MIN:MAX: at most MAX nodes
  auto t = node_start({"torchrun", "--nnodes", "2", "--node-rank", "1", "--master-addr", "n0", "--master-port", "29500", "t.py"},
                      -1, env_of({}));
  EXPECT_EQ(t.node_rank, 1);
  EXPECT_EQ(t.job.key(), "master:n0:29500");
  // c10d with the default id: no node rank until the ranks report GROUP_RANK; "none" is no id.
  auto c = node_start({"torchrun", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n0:29400", "t.py"}, -1,
                      env_of({{"TORCHELASTIC_RUN_ID", "none"}}));
  EXPECT_EQ(c.node_rank, -1);
  EXPECT_EQ(c.job.key(), "master:n0:29400");
  EXPECT_EQ(node_start({"torchrun", "t.py"}, 7, env_of({{"SLURM_NODEID", "3"}})).node_rank, 7);  // --node-rank wins
}

TEST(NodeDir, TwoNodesOnOneHostNeverCollide) {
  TempDir t;
  std::string note;
  const std::string a = make_node_dir(t.path + "/job", "h", 0, 11, note);
  EXPECT_TRUE(note.empty());
  const std::string b = make_node_dir(t.path + "/job", "h", 1, 12, note);
  EXPECT_NE(a, b);
  EXPECT_EQ(fs::path(a).filename(), "h-node0");
  // The same node rank again (a restart): a new folder, and a line saying why.
  const std::string c = make_node_dir(t.path + "/job", "h", 0, 13, note);
  EXPECT_EQ(fs::path(c).filename(), "h-node0-2");
  EXPECT_NE(note.find("already holds"), std::string::npos);
  EXPECT_EQ(fs::path(make_node_dir(t.path + "/job", "h", -1, 14, note)).filename(), "h-pid14");
}

TEST(NodeManifest, RoundTrip) {
  NodeManifest m = node(1, 40, 30, 0.25);
  m.findings.push_back({"dataloader-starvation", "high", "Training loop waiting for data", 0.4});
  m.traces = {"trace_rank2.pt.trace.json"};
  NodeManifest back;
  std::string err;
  ASSERT_TRUE(parse_node_manifest(node_manifest_json(m), back, err)) << err;
  EXPECT_EQ(back.node, m.node);
  EXPECT_EQ(back.job.key(), "master:10.0.0.1:29500");
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[1].rank, 3);
  EXPECT_DOUBLE_EQ(back.ranks[1].nonsync_ms, 40);
  ASSERT_EQ(back.ranks[0].step_ends.size(), 2u);
  EXPECT_DOUBLE_EQ(back.ranks[0].step_ends[1].second, 1'700'000'001.25);
  EXPECT_EQ(back.findings.at(0).id, "dataloader-starvation");
  EXPECT_EQ(back.traces, m.traces);
  EXPECT_EQ(back.trace_bytes, std::vector<int64_t>{-1});  // not measured: unknown
  m.trace_bytes = {31'457'280};
  ASSERT_TRUE(parse_node_manifest(node_manifest_json(m), back, err)) << err;
  EXPECT_EQ(back.trace_bytes, m.trace_bytes);
  EXPECT_FALSE(parse_node_manifest("{\"schema\": \"trainscope.node/1\", \"ranks\": [", back, err));
  EXPECT_NE(err.find("not valid JSON"), std::string::npos);
}

TEST(JobMerge, NamesTheSlowNodeAndWhatFixingItGives) {
  TempDir t;
  NodeManifest slow = node(1, 80, 60);
  slow.findings.push_back({"dataloader-starvation", "high", "Training loop waiting for data: loading takes 60% of each step", 0.5});
  slow.loader = "num_workers=0 batch_size=32 pin_memory=False";
  put(t.path, node(0, 20, 1));
  put(t.path, slow);
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(v.problems.empty()) << v.problems.front();
  EXPECT_EQ(v.job_key, "master:10.0.0.1:29500");
  EXPECT_EQ(v.slowest_node, "host1-node1");
  // busy = nonsync + min sync: 85 on node 1, 25 on node 0; fixing node 1 saves 60 of 100 ms.
  EXPECT_DOUBLE_EQ(v.slowest_busy_ms, 85);
  EXPECT_DOUBLE_EQ(v.next_node_busy_ms, 25);
  EXPECT_DOUBLE_EQ(v.fixed_step_ms, 40);
  EXPECT_DOUBLE_EQ(v.fixed_speedup, 2.5);
  const auto* f = finding(v, "straggler-rank");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("node host1-node1 is slow: 2 of its 2 ranks lag (2, 3), its rank 2"), std::string::npos) << f->title;
  // The same gain as the job's pace line: the slow node brought to the other nodes' pace.
  EXPECT_NE(f->gain.find("2.5x"), std::string::npos) << f->gain;
  EXPECT_NE(f->fix.find("Rank 2 on node host1-node1 waits 60.0 ms per step for its data"), std::string::npos) << f->fix;
  EXPECT_NE(f->explanation.find("its own diagnosis puts dataloader-starvation first"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("num_workers=0"), std::string::npos);
  EXPECT_EQ(finding(v, "node-mismatch"), nullptr);  // same installation
  const std::string text = job_report_text(v, {false, 160});
  EXPECT_NE(text.find("at the pace of node host1-node1"), std::string::npos) << text;
  EXPECT_NE(text.find("2.50x"), std::string::npos);
}

TEST(JobMerge, NodeDifferencesAreAFinding) {
  TempDir t;
  NodeManifest a = node(0, 20, 1), b = node(1, 20, 1);
  b.torch_version = "2.1.0";
  b.shm_total_bytes = 64 << 20;
  a.shm_total_bytes = 8.0 * (1 << 30);
  b.nccl_version = "";  // unknown never counts
  a.nccl_version = "2.18.1";
  put(t.path, a);
  put(t.path, b);
  JobView v = merge_job_dir(t.path, kNow);
  const auto* f = finding(v, "node-mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->explanation.find("PyTorch: 2.1.0 on host1-node1; 2.3.0 on host0-node0"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("/dev/shm"), std::string::npos);
  EXPECT_EQ(f->explanation.find("NCCL:"), std::string::npos);  // known on one node only
}

TEST(JobMerge, MissingNodeIsOneLineAndTheRestIsReported) {
  TempDir t;
  put(t.path, node(0, 20, 1));
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "node 1 of 2 missing")) << v.problems.size();
  EXPECT_TRUE(has(v, "ranks 2-3 of 4 not reported"));
  ASSERT_TRUE(v.evidence.ranks);
  EXPECT_EQ(v.evidence.ranks->ranks.size(), 2u);
}

TEST(JobMerge, RunningAndDeadNodes) {
  TempDir t;
  NodeManifest a = node(0, 20, 1), b = node(1, 20, 1);
  a.state = b.state = "running";
  a.updated_unix = kNow - 3;    // a heartbeat 3 s ago
  b.updated_unix = kNow - 600;  // silent for 10 minutes
  a.host = b.host = "elsewhere";  // not this host: judged by the heartbeat alone
  put(t.path, a);
  put(t.path, b);
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "node host0-node0: still running (updated 3 s ago)"));
  EXPECT_TRUE(has(v, "node host1-node1: stopped writing 600 s ago"));
  EXPECT_EQ(v.evidence.ranks->ranks.size(), 4u);  // the dead node's last numbers still count
}

TEST(JobMerge, TwoJobsMixedReportsTheLargerOne) {
  TempDir t;
  put(t.path, node(0, 20, 1));
  put(t.path, node(1, 20, 1));
  NodeManifest other = node(0, 20, 1, 0, "29999");
  other.node = "stranger-node0";
  put(t.path, other);
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "holds the nodes of 2 jobs: reporting master:10.0.0.1:29500"));
  EXPECT_TRUE(has(v, "left out: master:10.0.0.1:29999 (stranger-node0)"));
  EXPECT_EQ(v.nodes.size(), 2u);
  // The same master address and port a day later is another job too.
  TempDir u;
  put(u.path, node(0, 20, 1));
  NodeManifest later = node(1, 20, 1);
  later.started_unix += 86400, later.updated_unix += 86400, later.ended_unix += 86400;
  put(u.path, later);
  EXPECT_TRUE(has(merge_job_dir(u.path, kNow + 86400), "holds the nodes of 2 jobs"));
}

TEST(JobMerge, CutOffWrites) {
  TempDir t;
  put(t.path, node(0, 20, 1));
  NodeManifest b = node(1, 20, 1);
  b.traces = {"trace_rank2.pt.trace.json"};
  put(t.path, b);
  std::ofstream(fs::path(t.path) / b.node / "trace_rank2.pt.trace.json") << "{\"traceEvents\": [{\"ph\": \"X\", \"na";
  std::ofstream(fs::path(t.path) / b.node / ".node.json.tmp") << "{\"sche";
  fs::create_directories(fs::path(t.path) / "host2-node2");
  std::ofstream(fs::path(t.path) / "host2-node2" / "node.json") << "{\"schema\": \"trainscope.node/1\", \"ran";
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "trace_rank2.pt.trace.json: cut off"));
  EXPECT_TRUE(has(v, "a write of node.json was cut off"));
  EXPECT_TRUE(has(v, "host2-node2/node.json: not valid JSON"));
  EXPECT_EQ(v.nodes.size(), 2u);
  EXPECT_THROW(merge_job_dir(t.path + "/host0-node0", kNow), ts::UserError);  // a node folder is no job directory
}

// A trace is listed with its size when the node's run ends: a shorter copy is cut, told without
// reading it. A node.json from before sizes were kept gets the bracket count (trace/written_whole.h),
// which also sees a cut just after an event's '}' (the last byte alone looks whole there).
TEST(JobMerge, CutTracesByRecordedSizeOrByTheirBrackets) {
  TempDir t;
  const std::string whole = "{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"a\": 1}}, {\"ph\": \"X\"}]}\n";
  NodeManifest a = node(0, 20, 1);
  a.traces = {"trace_rank0.pt.trace.json", "trace_rank1.pt.trace.json"};
  a.trace_bytes = {static_cast<int64_t>(whole.size()), static_cast<int64_t>(whole.size())};
  put(t.path, a);
  std::ofstream(fs::path(t.path) / a.node / a.traces[0]) << whole;
  std::ofstream(fs::path(t.path) / a.node / a.traces[1]) << whole.substr(0, 20);
  NodeManifest b = node(1, 20, 1);  // sizes unknown (an older node.json)
  b.traces = {"trace_rank2.pt.trace.json", "trace_rank3.pt.trace.json"};
  put(t.path, b);
  std::ofstream(fs::path(t.path) / b.node / b.traces[0]) << whole;
  const size_t after_event = whole.find("}}") + 2;  // ends with '}': the end of the first event
  std::ofstream(fs::path(t.path) / b.node / b.traces[1]) << whole.substr(0, after_event);
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "trace_rank1.pt.trace.json: cut off (20 of the " + std::to_string(whole.size()) + " bytes"));
  EXPECT_TRUE(has(v, "trace_rank3.pt.trace.json: cut off (the JSON does not end)"));
  EXPECT_FALSE(has(v, "trace_rank0.pt.trace.json"));
  EXPECT_FALSE(has(v, "trace_rank2.pt.trace.json"));
}

TEST(JobMerge, ClocksThatDisagree) {
  TempDir t;
  put(t.path, node(0, 20, 1));
  put(t.path, node(1, 20, 1, 37.5));
  JobView v = merge_job_dir(t.path, kNow);
  EXPECT_TRUE(has(v, "clocks disagree: by node host1-node1's clock its steps end 37.5 s later")) << v.problems.size();
  EXPECT_DOUBLE_EQ(v.clock_offset_s, 37.5);
  TempDir u;
  put(u.path, node(0, 20, 1));
  put(u.path, node(1, 20, 1, 0.02));  // 20 ms: within one step, agreeing clocks
  EXPECT_TRUE(merge_job_dir(u.path, kNow).problems.empty());
}

TEST(JobMerge, ManyRanksMergeInOnePass) {
  TempDir t;
  for (int n = 0; n < 16; ++n) {
    NodeManifest m = node(n, n == 11 ? 90 : 20, 1);
    m.job.nnodes = 16;
    m.world_size = 32;
    put(t.path, m);
  }
  size_t calls = 0;
  JobView v = merge_job_dir(t.path, kNow, [&](size_t done, size_t total) {
    ++calls;
    EXPECT_LE(done, total);
  });
  EXPECT_EQ(calls, 16u);
  EXPECT_TRUE(v.problems.empty());
  EXPECT_EQ(v.slowest_node, "host11-node11");
  EXPECT_EQ(v.evidence.ranks->ranks.size(), 32u);
}

TEST(NodeManifest, FromTheRanksRecords) {
  // torchrun's c10d rendezvous: the node rank and run id are known only from the ranks' hello.
  Records r;
  for (int l = 0; l < 2; ++l) {
    TextRecord t;
    t.pid = 100 + l;
    t.kind = "hello";
    t.kv = {{"rank", std::to_string(2 + l)}, {"local_rank", std::to_string(l)}, {"world_size", "4"},
            {"local_world_size", "2"}, {"group_rank", "1"}, {"group_world_size", "2"}, {"run_id", "exp7"},
            {"python", "3.11.2"}};
    r.texts.push_back(t);
    for (int s = 1; s <= 12; ++s) {
      StepRecord st;
      st.pid = 100 + l;
      st.step = s;
      st.flags = kStepOptimizer;
      st.dur_ns = 100'000'000;
      st.data_wait_ns = (l == 0 ? 60 : 1) * 1'000'000;
      st.bwd_ns = 20'000'000;
      st.t_end_ns = s * 100'000'000LL;
      r.steps.push_back(st);
    }
  }
  NodeManifest m;
  fill_from_records(m, r, 1'700'000'000.0);
  EXPECT_EQ(m.node_rank, 1);
  EXPECT_EQ(m.node_rank_source, "GROUP_RANK (from the ranks)");
  EXPECT_EQ(m.job.key(), "rdzv:exp7");
  EXPECT_EQ(m.job.nnodes, 2);
  EXPECT_EQ(m.world_size, 4);
  EXPECT_EQ(m.python_version, "3.11.2");
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].rank, 2);
  EXPECT_DOUBLE_EQ(m.ranks[0].data_wait_ms, 60);
  EXPECT_DOUBLE_EQ(m.ranks[0].sync_ms, 20);       // backward: DDP's all-reduce is inside it
  EXPECT_DOUBLE_EQ(m.ranks[0].nonsync_ms, 80);
  // Steps 2, 5 and 10 on the wall clock: monotonic end + the offset.
  ASSERT_EQ(m.ranks[0].step_ends.size(), 3u);
  EXPECT_EQ(m.ranks[0].step_ends[1].first, 5);
  EXPECT_DOUBLE_EQ(m.ranks[0].step_ends[1].second, 1'700'000'000.5);
}
