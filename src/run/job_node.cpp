#include "run/job_node.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "run/agent_summary.h"
#include "run/rank_summary.h"
#include "run/run_session.h"
#include "sample/readings.h"
#include "util/error.h"
#include "util/private_dir.h"

namespace ts::run {
namespace fs = std::filesystem;

std::string real_env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

namespace {

std::string program_name(const std::string& s) {
  auto p = s.rfind('/');
  return p == std::string::npos ? s : s.substr(p + 1);
}

// torchrun's options that take no value; every other option before the script takes one
// (torch/distributed/run.py's parser).
bool launcher_flag(const std::string& opt) {
  static const char* kFlags[] = {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path",
                                 "-m",           "--module",    "--use-env",   "--use_env",  "--no-cuda"};
  for (const char* f : kFlags)
    if (opt == f) return true;
  return false;
}

// "--rdzv_id" and "--rdzv-id" are the same option.
std::string canonical(std::string opt) {
  std::replace(opt.begin(), opt.end(), '_', '-');
  return opt;
}

int int_or(const std::string& s, int dflt) {
  if (s.empty()) return dflt;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  return end && *end == '\0' && v >= 0 && v < (1 << 24) ? static_cast<int>(v) : dflt;
}

}  // namespace

LauncherArgs parse_launcher_args(const std::vector<std::string>& cmd) {
  LauncherArgs a;
  size_t i = 0;
  for (; i < cmd.size(); ++i) {
    const std::string b = program_name(cmd[i]);
    if (b == "torchrun") break;
    if (cmd[i] == "-m" && i + 1 < cmd.size() &&
        (cmd[i + 1] == "torch.distributed.run" || cmd[i + 1] == "torch.distributed.launch")) {
      ++i;
      break;
    }
  }
  if (i >= cmd.size()) return a;
  a.torchrun = true;
  for (++i; i < cmd.size(); ++i) {
    const std::string& arg = cmd[i];
    if (arg.size() < 2 || arg[0] != '-') break;  // the training script: its own options follow
    std::string opt = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      opt = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    } else if (!launcher_flag(arg) && i + 1 < cmd.size()) {
      value = cmd[++i];
      has_value = true;
    }
    if (!has_value) continue;
    const std::string c = canonical(opt);
    if (c == "--rdzv-id") a.rdzv_id = value;
    else if (c == "--rdzv-endpoint") a.rdzv_endpoint = value;
    else if (c == "--master-addr") a.master_addr = value;
    else if (c == "--master-port") a.master_port = value;
    else if (c == "--nnodes") a.nnodes = value;
    else if (c == "--node-rank") a.node_rank = value;
  }
  return a;
}

NodeStart node_start(const std::vector<std::string>& command, int node_rank_flag, const EnvGetter& env) {
  NodeStart s;
  const LauncherArgs a = parse_launcher_args(command);
  JobIdentity& j = s.job;
  j.slurm_job_id = env("SLURM_JOB_ID");
  j.rdzv_id = !a.rdzv_id.empty() ? a.rdzv_id : env("TORCHELASTIC_RUN_ID");
  // --rdzv-endpoint host:port is where the c10d rendezvous meets: the job's meeting point.
  std::string ep_host, ep_port;
  if (!a.rdzv_endpoint.empty()) {
    auto colon = a.rdzv_endpoint.rfind(':');
    ep_host = a.rdzv_endpoint.substr(0, colon);
    if (colon != std::string::npos) ep_port = a.rdzv_endpoint.substr(colon + 1);
  }
  j.master_addr = !a.master_addr.empty() ? a.master_addr : !ep_host.empty() ? ep_host : env("MASTER_ADDR");
  j.master_port = !a.master_port.empty() ? a.master_port : !ep_port.empty() ? ep_port : env("MASTER_PORT");
  // --nnodes MIN:MAX (elastic): at most MAX nodes join.
  std::string nn = a.nnodes;
  if (auto colon = nn.find(':'); colon != std::string::npos) nn = nn.substr(colon + 1);
  j.nnodes = int_or(nn, -1);
  if (j.nnodes < 0) j.nnodes = int_or(env("SLURM_NNODES"), int_or(env("SLURM_JOB_NUM_NODES"), -1));
  if (node_rank_flag >= 0) {
    s.node_rank = node_rank_flag, s.node_rank_source = "--node-rank";
  } else if (int r = int_or(env("SLURM_NODEID"), -1); r >= 0) {
    s.node_rank = r, s.node_rank_source = "SLURM_NODEID";
  } else if (int r2 = int_or(a.node_rank, -1); r2 >= 0) {
    s.node_rank = r2, s.node_rank_source = "torchrun --node-rank";
  } else if (int r3 = int_or(env("GROUP_RANK"), -1); r3 >= 0) {
    s.node_rank = r3, s.node_rank_source = "GROUP_RANK";
  } else if (j.nnodes == 1) {
    s.node_rank = 0, s.node_rank_source = "single node (--nnodes 1)";
  }
  return s;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string h = buf;
  // A folder name: nothing that could climb out of the job directory.
  for (char& c : h)
    if (c == '/' || c == '\\') c = '_';
  return h;
}

std::string make_node_dir(const std::string& job_dir, const std::string& host, int node_rank, long pid,
                          std::string& note) {
  std::error_code ec;
  fs::create_directories(job_dir, ec);
  if (!fs::is_directory(job_dir))
    throw UserError(job_dir + ": cannot create the job directory: " + (ec ? ec.message() : "not a directory"));
  const std::string base = node_rank >= 0 ? fmt::format("{}-node{}", host, node_rank) : fmt::format("{}-pid{}", host, pid);
  for (int i = 1; i < 1000; ++i) {
    const std::string name = i == 1 ? base : fmt::format("{}-{}", base, i);
    const std::string path = (fs::path(job_dir) / name).string();
    // mkdir is atomic on every file system, NFS included: two nodes that race for one name
    // never share the folder.
    if (::mkdir(path.c_str(), 0755) == 0) {
      if (i > 1)
        note = fmt::format("{} already holds a node's results (a restarted node, or another job in this job "
                           "directory?): this node writes {}", (fs::path(job_dir) / base).string(), path);
      return fs::absolute(path).lexically_normal().string();
    }
    if (errno != EEXIST) throw UserError(path + ": cannot create the node's folder: " + std::strerror(errno));
  }
  throw UserError(job_dir + ": 999 folders named " + base + " already: use a job directory per job");
}

double monotonic_to_unix_offset() {
  timespec rt{}, mono{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (rt.tv_sec - mono.tv_sec) + (rt.tv_nsec - mono.tv_nsec) / 1e9;
}

void fill_from_records(NodeManifest& m, const Records& records, double mono_to_unix) {
  for (const auto& t : records.texts) {
    auto set = [&](std::string& field, const char* key) {
      if (field.empty() && !t.get(key).empty() && t.get(key) != "None") field = t.get(key);
    };
    if (t.kind == "hello" && !t.get("rank").empty()) {
      set(m.job.rdzv_id, "run_id");
      set(m.job.master_addr, "master_addr");
      set(m.job.master_port, "master_port");
      set(m.python_version, "python");
      if (m.world_size < 0) m.world_size = static_cast<int>(t.get_int("world_size", -1));
      if (m.local_world_size < 0) m.local_world_size = static_cast<int>(t.get_int("local_world_size", -1));
      if (m.job.nnodes < 0) m.job.nnodes = static_cast<int>(t.get_int("group_world_size", -1));
      // torchrun's c10d rendezvous assigns the node rank only when the ranks start.
      if (m.node_rank < 0 && t.get_int("group_rank", -1) >= 0) {
        m.node_rank = static_cast<int>(t.get_int("group_rank", -1));
        m.node_rank_source = "GROUP_RANK (from the ranks)";
      }
    } else if (t.kind == "torch") {
      set(m.torch_version, "torch_version");
      set(m.cuda_version, "cuda_version");
    } else if (t.kind == "runtime") {
      set(m.nccl_version, "nccl_version");
      set(m.gpu_model, "device_name");
    }
  }
  auto ranks = summarise_ranks(records, 1);
  if (!ranks) return;
  m.ranks.clear();
  for (const auto& x : ranks->ranks) {
    NodeRank r;
    r.rank = x.rank;
    r.local_rank = x.local_rank;
    r.pid = x.pid;
    r.steps = x.steps;
    r.step_ms = x.step_ms;
    r.data_wait_ms = x.data_wait_ms;
    r.forward_ms = x.forward_ms;
    r.backward_ms = x.backward_ms;
    r.optimizer_ms = x.optimizer_ms;
    r.comm_ms = x.comm_ms;
    r.nonsync_ms = x.nonsync_ms;
    r.sync_ms = x.sync_ms;
    r.rss_max_bytes = x.rss_max_bytes;
    // A few step numbers every rank of the job reaches (kept in the records' head sample).
    static constexpr int64_t kRefSteps[] = {2, 5, 10, 20, 50, 100, 200};
    for (const StepRecord& s : steps_of(records, static_cast<pid_t>(x.pid)))
      if (std::find(std::begin(kRefSteps), std::end(kRefSteps), s.step) != std::end(kRefSteps) && s.t_end_ns > 0)
        r.step_ends.emplace_back(s.step, s.t_end_ns / 1e9 + mono_to_unix);
    m.ranks.push_back(std::move(r));
  }
}

void fill_from_result(NodeManifest& m, const RunResult& r) {
  m.exit_code = r.exit.code;
  m.exit_signal = r.exit.signal;
  m.exit_cause = death_cause(r);
  if (r.evidence.agent) {
    const auto& a = *r.evidence.agent;
    if (m.torch_version.empty()) m.torch_version = a.torch_version;
    if (m.cuda_version.empty()) m.cuda_version = a.cuda_version;
    if (m.python_version.empty()) m.python_version = a.python_version;
    if (m.gpu_model.empty()) m.gpu_model = a.device_name;
    if (!a.loaders.empty()) {
      const auto& l = a.loaders.front();
      m.loader = fmt::format("num_workers={} batch_size={} pin_memory={}", l.num_workers, l.batch_size,
                             l.pin_memory ? "True" : "False");
    }
  }
  if (r.evidence.samples) {
    const auto& s = *r.evidence.samples;
    m.cpu_cores = s.cpu_cores;
    m.cpu_budget_cores = s.cpu_budget_cores;
    m.shm_total_bytes = s.shm_total_bytes;
    m.host_cpu_mean_pct = s.host_cpu_mean_pct;
    m.process_tree_cpu_mean_pct = s.process_tree_cpu_mean_pct;
    if (s.nvml) {
      m.gpus = s.gpus;
      m.gpu_util_mean_pct = s.gpu_util_mean_pct;
      m.throttled_pct = s.throttled_pct;
      m.throttle_reasons = sample::decode_clock_reasons(s.throttle_reasons_seen & sample::kSlowdownReasons);
    }
    m.threads_oversubscribed = s.threads_oversubscribed;
    m.threads_summary = s.threads_summary;
  }
  m.findings.clear();
  if (r.diagnosis)
    for (const auto& f : r.diagnosis->findings) {
      if (m.findings.size() >= 5) break;
      m.findings.push_back({f.id, std::string(diagnose::severity_name(f.severity)), f.title, f.recoverable_fraction});
    }
  m.report = r.report_path.empty() ? "" : fs::path(r.report_path).filename().string();
  m.traces.clear();
  m.trace_bytes.clear();
  auto add_trace = [&m](const std::string& t) {
    std::error_code ec;
    const auto size = fs::file_size(t, ec);
    m.traces.push_back(fs::path(t).filename().string());
    m.trace_bytes.push_back(ec ? -1 : static_cast<int64_t>(size));
  };
  for (const auto& t : r.rank_traces) add_trace(t);
  if (m.traces.empty() && !r.trace_path.empty()) add_trace(r.trace_path);
}

bool write_node_manifest(const std::string& node_dir, const NodeManifest& m) {
  return write_shared_file_atomically((fs::path(node_dir) / kNodeManifest).string(), node_manifest_json(m));
}

}  // namespace ts::run
