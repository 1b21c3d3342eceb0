// `trainscope serve` end to end: the real binary on a loopback port, scraped by a real
// Prometheus server (Debian's `prometheus`, started here with a temporary config and storage
// directory, loopback only, 1 s scrape interval), and the metrics queried back through
// Prometheus's HTTP API (/api/v1/query). The GPUs come from the sample layer's NVML injection
// library, a STAND-IN for the NVIDIA driver on this GPU-less machine. Every process started
// here is bounded (--duration, a deadline) and killed at the end.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <simdjson.h>
#include <thread>
#include <vector>

#include "serve/test_util.h"
#include "support/contains.h"

using ts::test::free_port;
using ts::test::http_get;
using ts::test::run_cmd;

namespace {

using Clock = std::chrono::steady_clock;

using ts::test::has;

// A child process with its stderr on a pipe; killed when the object goes.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    int err[2];
    if (pipe2(err, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(err[1], 2);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(err[1]);
    err_ = err[0];
  }
  ~Child() { stop(); }
  // Reads stderr until `re` matches (returns the first group) or the deadline passes.
  std::string wait_for(const std::regex& re, double seconds) {
    auto end = Clock::now() + std::chrono::duration<double>(seconds);
    std::smatch m;
    while (Clock::now() < end) {
      if (std::regex_search(stderr_, m, re)) return m[1];
      pollfd p{err_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        ssize_t n = read(err_, buf, sizeof(buf));
        if (n <= 0) break;
        stderr_.append(buf, static_cast<size_t>(n));
      }
    }
    return std::regex_search(stderr_, m, re) ? std::string(m[1]) : std::string();
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 100; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
      }
    }
    if (err_ >= 0) close(err_), err_ = -1;
  }
  const std::string& err() const { return stderr_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  std::string stderr_;
};

std::string temp_dir(const char* prefix) {
  std::string t = std::string("/tmp/") + prefix + "XXXXXX";
  return mkdtemp(t.data());
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string fmt_hex(char c) {  // one percent-encoded byte
  static const char* hex = "0123456789ABCDEF";
  std::string s = "%";
  s += hex[(static_cast<unsigned char>(c) >> 4) & 0xF];
  s += hex[static_cast<unsigned char>(c) & 0xF];
  return s;
}

// Polls Prometheus until `query` returns a vector with at least one sample; returns it as JSON text.
std::string query_until(int port, const std::string& query, double seconds) {
  std::string enc;
  for (char c : query) {
    if (isalnum(static_cast<unsigned char>(c)) || c == '_') enc += c;
    else enc += fmt_hex(c);
  }
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::string body;
  while (Clock::now() < end) {
    body = http_get(port, "/api/v1/query?query=" + enc);
    if (has(body, "\"result\":[{")) return body;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return body;
}

}  // namespace

#ifdef TS_NVML_INJECT
TEST(Serve, ScrapedByRealPrometheus) {
  ASSERT_EQ(run_cmd("command -v prometheus >/dev/null && command -v promtool >/dev/null").status, 0)
      << "Debian's prometheus package is a test dependency (scripts/bootstrap)";
  std::string dir = temp_dir("ts_serve_e2e_");
  // The stand-in driver: two H100s, GPU 1 power-capped at 37% utilisation.
  std::string script = dir + "/nvml.txt";
  std::ofstream(script) << "gpus 2\nall name NVIDIA H100 80GB HBM3\ngpu 0 util 91\ngpu 1 util 37\n"
                           "gpu 1 reasons 4\n";
  // A live training run on this host: this test process plays its writer.
  std::string live = dir + "/live";
  mkdir(live.c_str(), 0700);
  std::ofstream(live + "/" + std::to_string(getpid()) + ".json")
      << "{\"schema\":\"trainscope.live/1\",\"pid\":" << getpid() << ",\"child_pid\":" << getpid()
      << ",\"run_id\":\"e2e\",\"command\":\"python train.py\",\"rank\":0,\"world_size\":1,\"updated_unix\":"
      << std::fixed << unix_now() << ",\"stale_after_s\":600,\"steps_total\":123,\"data_wait_seconds_total\":4.5,"
      << "\"step_time_seconds\":{\"buckets\":[[0.05,100],[0.1,120],[\"+Inf\",123]],\"sum\":6.2,\"count\":123},"
      << "\"window\":{\"data_wait_ratio\":0.35,\"samples_per_second\":640},"
      << "\"top_finding\":{\"id\":\"dataloader-starvation\",\"severity\":\"high\",\"title\":\"GPU waits for data\"}}";

  Child serve({TS_CLI, "serve", "--listen", "127.0.0.1:0", "--interval", "200ms", "--live-dir", live, "--duration", "120"},
              {"TRAINSCOPE_NVML_LIBRARY=" TS_NVML_INJECT, "NVML_INJECT_SCRIPT=" + script});
  std::string port_text = serve.wait_for(std::regex(R"(listening on http://127\.0\.0\.1:(\d+)/metrics)"), 20);
  ASSERT_FALSE(port_text.empty()) << serve.err();
  int port = std::stoi(port_text);

  // The endpoint itself: content type, a 404, and promtool's lint on a real scrape.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int status = 0;
  std::string metrics = http_get(port, "/metrics", &status);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(has(metrics, "trainscope_gpu_utilization_ratio{gpu=\"1\"")) << metrics;
  http_get(port, "/nope", &status);
  EXPECT_EQ(status, 404);
  auto lint = ts::test::promtool_lint(metrics);
  EXPECT_EQ(lint.status, 0) << lint.out;
  EXPECT_EQ(lint.out, "");
  EXPECT_TRUE(lint.camel_only);

  // Prometheus on loopback, scraping every second, storing under the temp dir.
  int prom_port = free_port();
  std::ofstream(dir + "/prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                            "scrape_configs:\n  - job_name: trainscope\n    static_configs:\n"
                                            "      - targets: ['127.0.0.1:" << port << "']\n";
  Child prom({"prometheus", "--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/tsdb",
              "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"});

  std::string util = query_until(prom_port, "trainscope_gpu_utilization_ratio{gpu=\"1\"}", 60);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(util).get(doc), simdjson::SUCCESS) << util << "\nprometheus: " << prom.err();
  EXPECT_EQ(std::string_view(doc["status"]), "success");
  simdjson::dom::element sample = doc["data"]["result"].at(0);
  EXPECT_EQ(std::string_view(sample["metric"]["modelName"]), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(std::string_view(sample["metric"]["UUID"]), "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(std::string_view(sample["metric"]["job"]), "trainscope");
  EXPECT_EQ(std::string_view(sample["value"].at(1)), "0.37");

  // A counter that grows: GPU 1 spends its time power-capped.
  std::string capped = query_until(prom_port, "trainscope_gpu_clock_event_seconds_total{gpu=\"1\",reason=\"sw_power_cap\"} > 0", 30);
  EXPECT_TRUE(has(capped, "\"result\":[{")) << capped;

  // The training run's metrics, through Prometheus.
  std::string steps = query_until(prom_port, "trainscope_training_steps_total{run_id=\"e2e\"}", 30);
  ASSERT_EQ(parser.parse(steps).get(doc), simdjson::SUCCESS) << steps;
  EXPECT_EQ(std::string_view(doc["data"]["result"].at(0)["value"].at(1)), "123");
  std::string p50 = query_until(
      prom_port, "histogram_quantile(0.5, trainscope_training_step_duration_seconds_bucket{run_id=\"e2e\"})", 30);
  ASSERT_EQ(parser.parse(p50).get(doc), simdjson::SUCCESS) << p50;
  // Median of 123 steps: rank 61.5 falls in the first bucket (0, 0.05]: 0.05 * 61.5/100.
  double median = std::stod(std::string(std::string_view(doc["data"]["result"].at(0)["value"].at(1))));
  EXPECT_NEAR(median, 0.05 * 61.5 / 100, 1e-9);
  std::string finding = query_until(prom_port, "trainscope_training_top_finding_info{id=\"dataloader-starvation\"}", 30);
  EXPECT_TRUE(has(finding, "\"severity\":\"high\"")) << finding;

  prom.stop();
  serve.stop();
  run_cmd("rm -rf " + dir);
}
#endif

TEST(Serve, PortTakenIsOneClearLine) {
  // Hold a loopback port, then ask serve for it.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  auto r = run_cmd(std::string(TS_CLI) + " serve --listen 127.0.0.1:" + std::to_string(port) + " --duration 5 2>&1");
  close(fd);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "trainscope: 127.0.0.1:" + std::to_string(port) + ": port " + std::to_string(port) +
                       " is already in use (another trainscope serve, or dcgm-exporter on 9400?): pick another with "
                       "--listen HOST:PORT\n");
}

TEST(Serve, BadListenAddress) {
  auto r = run_cmd(std::string(TS_CLI) + " serve --listen 127.0.0.1:99999 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "trainscope: --listen 127.0.0.1:99999: '99999' is not a port number (0-65535)\n");
  r = run_cmd(std::string(TS_CLI) + " serve --listen nocolon 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "expected HOST:PORT")) << r.out;
}

TEST(Serve, OncePrintsALintCleanExposition) {
  auto r = run_cmd(std::string(TS_CLI) + " serve --once --interval 100ms --live-dir /nonexistent 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(has(r.out, "# TYPE trainscope_host_cpu_seconds_total counter"));
  EXPECT_TRUE(has(r.out, "trainscope_training_runs{"));
  auto lint = ts::test::promtool_lint(r.out);
  EXPECT_EQ(lint.status, 0) << lint.out;
  EXPECT_EQ(lint.out, "");
}
