// The exposition writer and the metrics built from crafted samples: escaping, number format,
// histograms, label sets that line up with dcgm-exporter's, and Debian's `promtool check
// metrics` on the result (it lints names, units, _total suffixes and the format itself).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "serve/exposition.h"
#include "serve/live_status.h"
#include "serve/metrics.h"
#include "serve/test_util.h"
#include "support/contains.h"

using namespace ts::serve;

namespace {

using ts::test::has;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}


ScrapeInput two_gpus(const ThrottleAccumulator& throttle) {
  ScrapeInput in;
  in.hostname = "node-7";
  in.nvml = true;
  in.driver_version = "550.54.15";
  for (int i = 0; i < 2; ++i) {
    ts::sample::GpuInfo g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = "GPU-0000000" + std::to_string(i);
    g.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.mem_total_bytes = 85899345920.0;
    g.sm_clock_max_mhz = 1980;
    g.pcie_gen_max = 5, g.pcie_width_max = 16;
    g.power_limit_w = 700;
    in.gpus.push_back(g);
    ts::sample::GpuReading r;
    r.index = i;
    r.util_pct = i == 0 ? 97 : 12;
    r.sm_active_pct = i == 0 ? 41.5 : 3;
    r.tensor_active_pct = i == 0 ? 22.25 : 0;
    r.mem_used_bytes = 1.5e10;
    r.mem_total_bytes = g.mem_total_bytes;
    r.temp_c = 61;
    r.power_w = 512.5;
    r.energy_j = 123456.789;
    r.sm_clock_mhz = 1755;
    r.mem_clock_mhz = 2619;
    r.clock_reasons = 0x4;
    r.pcie_gen = 5, r.pcie_width = 16;
    r.processes = {{100, 1e9}};
    in.tick.gpus.push_back(r);
  }
  in.tick.host.cpu_busy_pct = 37.5;
  in.tick.host.cpu_cores_usable = 64;
  in.tick.host.cpu_budget_cores = 16;
  in.tick.host.mem_total_bytes = 5.4e11;
  in.tick.host.mem_available_bytes = 4.0e11;
  in.tick.host.cpu_pressure.total_us = 2500000;
  in.tick.host.shm_total_bytes = 6.7e10;
  in.tick.host.shm_used_bytes = 1e6;
  in.cpu_busy_seconds = 1000.5;
  in.cpu_idle_seconds = 9000.25;
  in.throttle = &throttle;
  in.now_unix = 1795000125.5;
  return in;
}

}  // namespace

TEST(Exposition, NumbersAndEscaping) {
  EXPECT_EQ(format_value(1), "1");
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(NAN), "NaN");
  EXPECT_EQ(format_value(INFINITY), "+Inf");
  EXPECT_EQ(format_value(-INFINITY), "-Inf");
  EXPECT_EQ(format_value(1e21), "1e+21");
  EXPECT_TRUE(valid_metric_name("a:b_c9"));
  EXPECT_FALSE(valid_metric_name("9abc"));
  EXPECT_FALSE(valid_metric_name("a-b"));
  EXPECT_FALSE(valid_label_name("__reserved"));
  EXPECT_FALSE(valid_label_name("a:b"));

  Exposition e;
  e.family("x_total", MetricType::counter, "line one\nback\\slash");
  e.sample("x_total", {{"title", "say \"hi\"\\n\nnext"}}, 2.5);
  e.family("never_sampled", MetricType::gauge, "omitted");
  EXPECT_EQ(e.text(),
            "# HELP x_total line one\\nback\\\\slash\n# TYPE x_total counter\n"
            "x_total{title=\"say \\\"hi\\\"\\\\n\\nnext\"} 2.5\n");
  EXPECT_THROW(e.family("bad-name", MetricType::gauge, ""), std::logic_error);
  EXPECT_THROW(e.sample("undeclared", {}, 1), std::logic_error);
  EXPECT_THROW(e.sample("x_total", {{"bad-label", "v"}}, 1), std::logic_error);
}

TEST(Exposition, HistogramAddsInfBucketSumAndCount) {
  Exposition e;
  e.family("h_seconds", MetricType::histogram, "h");
  e.histogram("h_seconds", {{"rank", "0"}}, {{0.1, 3}, {0.5, 7}}, 1.75, 9);
  EXPECT_EQ(e.text(),
            "# HELP h_seconds h\n# TYPE h_seconds histogram\n"
            "h_seconds_bucket{rank=\"0\",le=\"0.1\"} 3\nh_seconds_bucket{rank=\"0\",le=\"0.5\"} 7\n"
            "h_seconds_bucket{rank=\"0\",le=\"+Inf\"} 9\nh_seconds_sum{rank=\"0\"} 1.75\nh_seconds_count{rank=\"0\"} 9\n");
}

TEST(Throttle, IntegratesHeldReasons) {
  ThrottleAccumulator t;
  t.add(1, 0x4 | 0x40, 0.5);
  t.add(1, 0x4, 0.25);
  t.add(1, -1, 10);  // unknown: nothing
  EXPECT_DOUBLE_EQ(t.seconds(1, 2), 0.75);  // sw_power_cap
  EXPECT_DOUBLE_EQ(t.seconds(1, 6), 0.5);   // hw_thermal
  EXPECT_DOUBLE_EQ(t.seconds(0, 2), 0);
  EXPECT_EQ(t.gpus(), 2u);
}

TEST(Metrics, GpuHostAndTrainingSeries) {
  ThrottleAccumulator throttle;
  throttle.add(0, 0x4, 12.5);
  ScrapeInput in = two_gpus(throttle);
  LiveStatus s;
  std::string err;
  ASSERT_TRUE(parse_live_status(read_file(TS_SOURCE_DIR "/tests/serve/data/live_status_example.json"), s, err)) << err;
  in.live.push_back(s);
  std::string text = render_metrics(in);

  const std::string gpu0 = R"({gpu="0",UUID="GPU-00000000",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:10:00.0",Hostname="node-7"})";
  EXPECT_TRUE(has(text, "trainscope_gpu_utilization_ratio" + gpu0 + " 0.97\n")) << text;
  EXPECT_TRUE(has(text, "trainscope_gpu_sm_active_ratio" + gpu0 + " 0.415\n"));
  EXPECT_TRUE(has(text, "trainscope_gpu_tensor_active_ratio" + gpu0 + " 0.2225\n"));
  EXPECT_TRUE(has(text, "trainscope_gpu_energy_joules_total" + gpu0 + " 123456.789\n"));
  EXPECT_TRUE(has(text, "trainscope_gpu_sm_clock_hertz" + gpu0 + " 1755000000\n"));
  EXPECT_TRUE(has(text, "trainscope_gpu_memory_total_bytes" + gpu0 + " 85899345920\n"));
  EXPECT_TRUE(has(text, R"(trainscope_gpu_clock_event_seconds_total{gpu="0",UUID="GPU-00000000",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:10:00.0",Hostname="node-7",reason="sw_power_cap"} 12.5)"));
  EXPECT_TRUE(has(text, "# TYPE trainscope_gpu_energy_joules_total counter\n"));
  EXPECT_TRUE(has(text, R"(trainscope_host_cpu_seconds_total{mode="busy",Hostname="node-7"} 1000.5)"));
  EXPECT_TRUE(has(text, R"(trainscope_host_cpu_busy_ratio{Hostname="node-7"} 0.375)"));
  EXPECT_TRUE(has(text, R"(trainscope_host_cpu_pressure_waiting_seconds_total{Hostname="node-7"} 2.5)"));

  const std::string run = R"({pid="4243",rank="1",run_id="20261122-050000-4242",Hostname="node-7")";
  EXPECT_TRUE(has(text, "trainscope_training_step_duration_seconds_bucket" + run + ",le=\"0.1\"} 150\n")) << text;
  EXPECT_TRUE(has(text, "trainscope_training_step_duration_seconds_bucket" + run + ",le=\"+Inf\"} 240\n"));
  EXPECT_TRUE(has(text, "trainscope_training_step_duration_seconds_sum" + run + "} 26.4\n"));
  EXPECT_TRUE(has(text, "trainscope_training_steps_total" + run + "} 240\n"));
  EXPECT_TRUE(has(text, "trainscope_training_data_wait_ratio" + run + "} 0.42\n"));
  EXPECT_TRUE(has(text, "trainscope_training_samples_per_second" + run + "} 291.2\n"));
  EXPECT_TRUE(has(text, "trainscope_training_status_age_seconds" + run + "} 5\n"));
  EXPECT_TRUE(has(text, "trainscope_training_top_finding_info" + run +
                            R"(,id="dataloader-starvation",severity="high",title="The GPU waits for data 42% of each step"} 1)"));
  EXPECT_TRUE(has(text, R"(command="python train.py --epochs 3",local_rank="1",world_size="2"} 1)"));

  auto lint = ts::test::promtool_lint(text);
  EXPECT_EQ(lint.status, 0) << lint.out;
  EXPECT_EQ(lint.out, "") << lint.out;
  EXPECT_TRUE(lint.camel_only);  // the only complaint: dcgm-exporter's modelName spelling
}

TEST(Metrics, MultiNodeJobSeriesCarryJobIdAndNode) {
  ThrottleAccumulator throttle;
  ScrapeInput in = two_gpus(throttle);
  LiveStatus s;
  std::string err;
  ASSERT_TRUE(parse_live_status(read_file(TS_SOURCE_DIR "/tests/serve/data/live_status_example.json"), s, err)) << err;
  s.job = "slurm:4242", s.node = "gpu-7-node1";
  LiveStatus back;
  ASSERT_TRUE(parse_live_status(ts::sample::live_status_json(s), back, err)) << err;  // the hand-off keeps them
  EXPECT_EQ(back.job, "slurm:4242");
  EXPECT_EQ(back.node, "gpu-7-node1");
  in.live.push_back(back);
  std::string text = render_metrics(in);
  const std::string run = R"({pid="4243",rank="1",run_id="20261122-050000-4242",Hostname="node-7",job_id="slurm:4242",node="gpu-7-node1")";
  EXPECT_TRUE(has(text, "trainscope_training_steps_total" + run + "} 240\n")) << text;
  EXPECT_TRUE(has(text, "trainscope_training_data_wait_ratio" + run + "} 0.42\n"));
  // Never "job": Prometheus's own target label would rename it exported_job.
  EXPECT_FALSE(has(text, "job=\""));
  auto lint = ts::test::promtool_lint(text);
  EXPECT_EQ(lint.status, 0) << lint.out;
}

TEST(Metrics, NoDriverStillLintsClean) {
  ScrapeInput in;
  in.hostname = "cpu-box";
  in.nvml_error = "no NVIDIA driver found";
  in.tick.host.cpu_busy_pct = 10;
  std::string text = render_metrics(in);
  EXPECT_TRUE(has(text, "trainscope_nvml_up{Hostname=\"cpu-box\"} 0\n"));
  EXPECT_FALSE(has(text, "trainscope_gpu_"));
  EXPECT_TRUE(has(text, "trainscope_training_runs{Hostname=\"cpu-box\"} 0\n"));
  auto lint = ts::test::promtool_lint(text);
  EXPECT_EQ(lint.status, 0) << lint.out;
  EXPECT_EQ(lint.out, "");
}

TEST(LiveStatus, ParsesTheDocumentedExample) {
  LiveStatus s;
  std::string err;
  ASSERT_TRUE(parse_live_status(read_file(TS_SOURCE_DIR "/tests/serve/data/live_status_example.json"), s, err)) << err;
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(s.child_pid, 4243);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 2);
  ASSERT_EQ(s.step_buckets.size(), 7u);
  EXPECT_TRUE(std::isinf(s.step_buckets.back().first));
  EXPECT_DOUBLE_EQ(s.step_buckets[2].first, 0.1);
  EXPECT_DOUBLE_EQ(s.step_buckets[2].second, 150);
  EXPECT_DOUBLE_EQ(s.data_wait_ratio, 0.42);
  EXPECT_EQ(s.finding_id, "dataloader-starvation");
  EXPECT_FALSE(parse_live_status("{\"schema\":\"other\"}", s, err));
  EXPECT_FALSE(parse_live_status("not json", s, err));
}

// The writer (trainscope run) and the reader (serve) share one schema: what one writes, the
// other reads back field for field.
TEST(LiveStatus, WriterAndReaderShareOneSchema) {
  LiveStatus w;
  w.pid = 4242, w.child_pid = 4243, w.run_id = "17", w.command = "torchrun train.py";
  w.rank = 1, w.local_rank = 1, w.world_size = 2;
  w.started_unix = 1795000000, w.updated_unix = 1795000120;
  w.steps_total = 240, w.samples_total = 7680, w.data_wait_seconds_total = 31.5;
  w.step_buckets = {{0.05, 12}, {0.1, 150}, {INFINITY, 240}};
  w.step_seconds_sum = 26.4, w.step_count = 240;
  w.window_seconds = 10, w.window_steps = 91, w.step_time_mean_s = 0.11, w.data_wait_ratio = 0.42;
  w.samples_per_second = 291.2;
  w.has_finding = true, w.finding_id = "dataloader-starvation", w.finding_severity = "high";
  w.finding_title = "The GPU waits for data", w.finding_gain_ratio = 0.38;
  LiveStatus r;
  std::string err;
  ASSERT_TRUE(parse_live_status(ts::sample::live_status_json(w), r, err)) << err;
  EXPECT_EQ(r.pid, w.pid);
  EXPECT_EQ(r.child_pid, w.child_pid);
  EXPECT_EQ(r.run_id, w.run_id);
  EXPECT_EQ(r.command, w.command);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.started_unix, w.started_unix);
  EXPECT_EQ(r.updated_unix, w.updated_unix);
  EXPECT_EQ(r.steps_total, 240);
  EXPECT_EQ(r.samples_total, 7680);
  EXPECT_DOUBLE_EQ(r.data_wait_seconds_total, 31.5);
  ASSERT_EQ(r.step_buckets.size(), 3u);
  EXPECT_TRUE(std::isinf(r.step_buckets.back().first));
  EXPECT_DOUBLE_EQ(r.step_buckets[1].first, 0.1);
  EXPECT_DOUBLE_EQ(r.step_buckets[1].second, 150);
  EXPECT_DOUBLE_EQ(r.step_seconds_sum, 26.4);
  EXPECT_EQ(r.step_count, 240);
  EXPECT_DOUBLE_EQ(r.window_seconds, 10);
  EXPECT_EQ(r.window_steps, 91);
  EXPECT_DOUBLE_EQ(r.step_time_mean_s, 0.11);
  EXPECT_DOUBLE_EQ(r.data_wait_ratio, 0.42);
  EXPECT_DOUBLE_EQ(r.samples_per_second, 291.2);
  EXPECT_TRUE(r.has_finding);
  EXPECT_EQ(r.finding_id, w.finding_id);
  EXPECT_EQ(r.finding_severity, w.finding_severity);
  EXPECT_EQ(r.finding_title, w.finding_title);
  EXPECT_DOUBLE_EQ(r.finding_gain_ratio, 0.38);
}

TEST(LiveStatus, DirectoryDropsDeadStaleAndBroken) {
  char tmpl[] = "/tmp/ts_live_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir + "/" + name) << text; };
  const double now = 1795000100;
  auto status = [&](int pid, double updated, int rank) {
    return "{\"schema\":\"trainscope.live/1\",\"pid\":" + std::to_string(pid) + ",\"rank\":" + std::to_string(rank) +
           ",\"updated_unix\":" + std::to_string(updated) + ",\"steps_total\":5}";
  };
  write(std::to_string(getpid()) + "-r1.json", status(getpid(), now - 1, 1));
  write(std::to_string(getpid()) + "-r0.json", status(getpid(), now - 2, 0));
  write("stale.json", status(getpid(), now - 31, 2));           // older than 30 s
  write("dead.json", status(999999, now, 3));                   // writer gone
  write("broken.json", "{\"schema\":\"trainscope.live/1\"");    // half-written (no rename)
  write(".hidden.json.tmp", status(getpid(), now, 4));           // a writer's temp file
  std::vector<std::string> skipped;
  auto live = read_live_statuses(dir, now, &skipped);
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].rank, 0);
  EXPECT_EQ(live[1].rank, 1);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(has(skipped[0], "broken.json"));
  EXPECT_TRUE(read_live_statuses(dir + "/missing", now).empty());
  ts::test::run_cmd("rm -rf " + dir);
}

TEST(LiveStatus, AFolderOthersCanWriteIsNotRead) {
  // Another user could have planted these: a group/other-writable folder, or a symlink to one.
  char tmpl[] = "/tmp/ts_live_XXXXXX";
  std::string base = mkdtemp(tmpl);
  std::string dir = base + "/live";
  mkdir(dir.c_str(), 0700);
  const double now = 1795000100;
  std::ofstream(dir + "/1.json") << "{\"schema\":\"trainscope.live/1\",\"pid\":" << getpid()
                                 << ",\"updated_unix\":" << std::to_string(now) << ",\"steps_total\":5}";
  ASSERT_EQ(read_live_statuses(dir, now).size(), 1u);  // private: read
  chmod(dir.c_str(), 0777);
  std::vector<std::string> skipped;
  EXPECT_TRUE(read_live_statuses(dir, now, &skipped).empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(has(skipped[0], "has mode 0777")) << skipped[0];
  chmod(dir.c_str(), 0700);
  symlink(dir.c_str(), (base + "/link").c_str());
  skipped.clear();
  EXPECT_TRUE(read_live_statuses(base + "/link", now, &skipped).empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(has(skipped[0], "symbolic link")) << skipped[0];
  // A status file that is itself a symlink is not followed (O_NOFOLLOW), even in a private folder.
  symlink((dir + "/1.json").c_str(), (dir + "/2.json").c_str());
  EXPECT_EQ(read_live_statuses(dir, now).size(), 1u);
  ts::test::run_cmd("rm -rf " + base);
}

TEST(LiveStatus, DefaultDirectory) {
  const char* old = getenv("XDG_RUNTIME_DIR");
  std::string saved = old ? old : "";
  setenv("XDG_RUNTIME_DIR", "/tmp", 1);
  EXPECT_EQ(ts::sample::live_dir(), "/tmp/trainscope/live");
  setenv("XDG_RUNTIME_DIR", "/nonexistent-dir", 1);
  EXPECT_EQ(ts::sample::live_dir(), "/tmp/trainscope-" + std::to_string(getuid()) + "/live");
  if (old) setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else unsetenv("XDG_RUNTIME_DIR");
}

// Every PromQL expression in the shipped Grafana dashboard parses (promtool check rules), and
// every trainscope_* metric it names is one the exporter writes.
TEST(Deploy, DashboardQueriesParseAndNameRealMetrics) {
  std::string json = read_file(TS_SOURCE_DIR "/deploy/grafana-trainscope.json");
  ASSERT_FALSE(json.empty());
  std::vector<std::string> exprs;
  for (size_t at = json.find("\"expr\": \""); at != std::string::npos; at = json.find("\"expr\": \"", at + 1)) {
    size_t start = at + 9, end = start;
    std::string e;
    while (end < json.size() && json[end] != '"') {
      if (json[end] == '\\' && end + 1 < json.size()) ++end;  // \" inside the expression
      e += json[end++];
    }
    for (const char* var : {"$Hostname", "$gpu"})
      for (size_t p; (p = e.find(var)) != std::string::npos;) e.replace(p, std::string(var).size(), ".*");
    exprs.push_back(e);
  }
  ASSERT_GE(exprs.size(), 10u);
  char path[] = "/tmp/ts_dash_rules_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  {
    std::ofstream rules(path);
    rules << "groups:\n  - name: dashboard\n    rules:\n";
    for (size_t i = 0; i < exprs.size(); ++i) {
      std::string quoted;
      for (char c : exprs[i]) quoted += c == '\'' ? std::string("''") : std::string(1, c);
      rules << "      - record: dashboard_expr_" << i << "\n        expr: '" << quoted << "'\n";
    }
  }
  auto r = ts::test::run_cmd(std::string("promtool check rules ") + path + " 2>&1");
  unlink(path);
  EXPECT_EQ(r.status, 0) << r.out;

  // The metric names the dashboard uses exist in a rendered exposition (GPU + host + a run).
  ThrottleAccumulator throttle;
  throttle.add(0, 0x4, 1);
  ScrapeInput in = two_gpus(throttle);
  LiveStatus s;
  std::string err;
  ASSERT_TRUE(parse_live_status(read_file(TS_SOURCE_DIR "/tests/serve/data/live_status_example.json"), s, err));
  in.live.push_back(s);
  std::string text = render_metrics(in);
  for (const auto& e : exprs) {
    for (size_t p = e.find("trainscope_"); p != std::string::npos; p = e.find("trainscope_", p + 1)) {
      size_t q = p;
      while (q < e.size() && (isalnum(static_cast<unsigned char>(e[q])) || e[q] == '_')) ++q;
      std::string name = e.substr(p, q - p);
      EXPECT_TRUE(has(text, "\n" + name + "{") || has(text, "\n" + name + " ")) << name;
      p = q;
    }
  }
}
