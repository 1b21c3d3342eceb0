// trainscope serve: a Prometheus /metrics endpoint for GPUs, the host and live training runs.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <thread>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "serve/exposition.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "util/error.h"

namespace ts::cli {
namespace {

serve::HttpServer* g_server = nullptr;

void on_signal(int) {
  if (g_server) g_server->stop();  // async-signal-safe: sets a flag and writes one byte
}

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  struct Opts {
    std::string listen = "127.0.0.1:9400";
    std::string interval = "500ms";
    std::string live_dir;
    bool once = false;
    double duration = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("serve", "Prometheus /metrics endpoint: GPU, host and live training metrics");
  cmd->footer(
      "GPU metrics carry dcgm-exporter's labels (gpu, UUID, device, modelName, pci_bus_id, Hostname); units are\n"
      "Prometheus base units, ratios 0-1, and _total counters for energy, throttle time and CPU time. While a\n"
      "`trainscope run` is active on this host its step-time histogram, data-wait ratio, samples/s and top finding\n"
      "appear too (read from the live-status directory). Loopback only unless --listen names another address.\n"
      "docs/PROMETHEUS.md lists every metric and a scrape config; deploy/ has a Grafana dashboard.");
  cmd->add_option("--listen", o->listen, "HOST:PORT to listen on (port 0: any free port)")->capture_default_str();
  cmd->add_option("--interval", o->interval, "Sampling interval, 50ms to 60s")
      ->capture_default_str()->check(duration_between(std::chrono::milliseconds(50), std::chrono::seconds(60)));
  cmd->add_option("--live-dir", o->live_dir, "Directory of live-status files written by trainscope run (default: "
                                             "$XDG_RUNTIME_DIR/trainscope/live or /tmp/trainscope-UID/live)");
  cmd->add_flag("--once", o->once, "Print one exposition to stdout after one sampling interval and exit (no server)");
  cmd->add_option("--duration", o->duration, "Stop serving after this many seconds (0: until SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o] {
    serve::MetricsOptions mo;
    mo.interval = duration_value(o->interval);
    mo.live_dir = o->live_dir;
    if (o->once) {
      serve::MetricsCollector collector(mo);
      collector.start();
      // Two ticks, so CPU busy and throttle time cover one interval.
      std::this_thread::sleep_for(mo.interval * 2 + std::chrono::milliseconds(50));
      std::string text = collector.scrape();
      collector.stop();
      fmt::print("{}", text);
      return;
    }
    serve::HttpServer server(o->listen);  // throws the one-line error when the port is taken
    serve::ListenAddress la = serve::parse_listen(o->listen);
    serve::MetricsCollector collector(mo);
    collector.start();
    if (!globals().quiet) {
      fmt::print(stderr, "trainscope serve: listening on http://{}/metrics ({}; live runs from {})\n", server.address(),
                 collector.nvml_available() ? "NVML up" : collector.nvml_error(), collector.live_dir());
      if (!loopback(la.host))
        fmt::print(stderr, "trainscope serve: warning: {} is not loopback: anyone who can reach this port reads the metrics\n",
                   la.host.empty() ? "every interface" : la.host);
    }
    std::fflush(stderr);
    g_server = &server;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::thread timer;
    std::atomic<bool> done{false};
    if (o->duration > 0) {
      timer = std::thread([&] {
        auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(o->duration);
        while (!done && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        server.stop();
      });
    }
    server.serve([&](const std::string&, const std::string& path) {
      serve::HttpResponse r;
      if (path == "/metrics") {
        r.content_type = serve::kContentType;
        r.body = collector.scrape();
      } else if (path == "/" || path.empty()) {
        r.content_type = "text/html; charset=utf-8";
        r.body = "<html><head><title>trainscope</title></head><body><h1>trainscope serve</h1>"
                 "<p><a href=\"/metrics\">/metrics</a></p></body></html>\n";
      } else {
        r.status = 404;
        r.body = "not found: try /metrics\n";
      }
      return r;
    });
    done = true;
    if (timer.joinable()) timer.join();
    g_server = nullptr;
    collector.stop();
    if (!globals().quiet) fmt::print(stderr, "trainscope serve: stopped\n");
  });
}

}  // namespace ts::cli
