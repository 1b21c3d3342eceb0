// trainscope watch: every GPU and the host, 10-100 times a second, live on the terminal (or
// one plain line per interval without one), recorded into the SQLite store.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <thread>

#include "cli/commands.h"
#include "cli/option_values.h"
#include "cli/watch_screen.h"
#include "sample/readings_format.h"
#include "sample/sampler.h"
#include "store/recorder.h"
#include "util/error.h"
#include "util/json_writer.h"

namespace ts::cli {

namespace {

std::atomic<bool> g_stop{false};
void stop_on_signal(int) { g_stop = true; }

}  // namespace

void register_watch(CLI::App& app) {
  struct Opts {
    std::string interval = "100ms", record, csv;
    bool no_record = false, plain = false, json = false;
    int pid = 0;
    double duration = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("watch", "Live view of every GPU, the host and a job's processes, recorded as it goes");
  cmd->footer(
      "On a terminal: one panel per GPU (utilisation, SM and tensor activity with history, memory, temperature,\n"
      "power, clocks, throttle flags, and the utilisation pattern in words), per-core CPU bars and the processes\n"
      "under --pid. Keys: q quit, p pause, s sort processes. Without a terminal (or with --plain): one line per\n"
      "interval on stdout.\n"
      "Recording: into the SQLite store by default ($TRAINSCOPE_HOME/trainscope.db, else\n"
      "~/.local/share/trainscope/trainscope.db); --record FILE.db picks another, --no-record turns it off.\n"
      "A crash loses at most the last second. --csv also writes the samples as CSV (docs/SAMPLER.md).\n"
      "docs/SAMPLER.md lists every metric, unit and column.");
  cmd->add_option("--interval", o->interval, "Sampling interval, 10ms to 60s")
      ->capture_default_str()->check(duration_between(std::chrono::milliseconds(10), std::chrono::seconds(60)));
  cmd->add_option("--pid", o->pid, "Follow this process and its descendants (DataLoader workers, ranks)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--record", o->record, "Record into this SQLite file (default: the trainscope store)");
  cmd->add_flag("--no-record", o->no_record, "Do not record");
  cmd->add_option("--csv", o->csv, "Also write the samples as CSV to this file");
  cmd->add_option("--duration", o->duration, "Stop after this many seconds (default: until q or Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--plain", o->plain, "One plain line per interval even on a terminal");
  cmd->add_flag("--json", o->json, "One JSON object per interval (JSON Lines, the fields of snapshot --json)");
  cmd->get_option("--no-record")->excludes("--record");
  cmd->callback([o] {
    sample::SamplerConfig c;
    c.interval = duration_value(o->interval);
    c.slow_interval = std::max(c.interval, std::chrono::milliseconds(500));
    c.root_pid = o->pid;
    if (o->pid > 0 && kill(o->pid, 0) != 0 && errno == ESRCH)
      throw UserError(fmt::format("--pid {}: no such process", o->pid));
    const bool tty = !o->plain && !o->json && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
    sample::Sampler sampler(c);

    store::RecorderConfig rc;
    rc.db_path = o->no_record ? "" : (o->record.empty() ? store::Store::default_path() : o->record);
    rc.csv_path = o->csv;
    rc.kind = "watch";
    rc.command = o->pid > 0 ? fmt::format("watch --pid {}", o->pid) : "watch";
    store::Recorder rec(rc, sampler);  // a bad --record file fails here, before anything is shown
    if (!sampler.nvml_available() && !tty)
      fmt::print(stderr, "trainscope: {}; showing the host only\n", sampler.nvml_error());
    std::string recording;
    if (!rc.db_path.empty()) recording = fmt::format("recording to {} (run {})", rc.db_path, rec.run_id());
    if (!recording.empty() && !globals().quiet && !tty) fmt::print(stderr, "trainscope: {}\n", recording);

    g_stop = false;
    struct sigaction sa {};
    sa.sa_handler = stop_on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);

    sample::SnapshotView view;  // static parts of the JSON lines
    view.nvml = sampler.nvml_available();
    view.nvml_error = view.nvml ? "" : sampler.nvml_error();
    view.driver_version = sampler.driver_version();
    view.gpus = sampler.gpus();
    view.root_pid = o->pid;
    const bool json = o->json;
    sampler.start([&rec, &view, tty, json](const sample::Tick& t) {
      rec.on_tick(t);
      if (json) {
        view.tick = t;
        JsonWriter w(false);
        sample::write_json(w, view);
        fmt::print("{}\n", w.str());
        std::fflush(stdout);
      } else if (!tty) {
        fmt::print("{}\n", sample::plain_line(t));
        std::fflush(stdout);
      }
    });
    if (tty) {
      WatchScreenOptions wo;
      wo.recording = recording;
      wo.duration_s = o->duration;
      wo.color = !globals().no_color;
      run_watch_screen(sampler, wo, g_stop);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      while (!g_stop && sampler.callback_error().empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (o->duration > 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= o->duration)
          break;
      }
    }
    sampler.stop();
    if (std::string err = sampler.callback_error(); !err.empty()) throw UserError(err);
    rec.finish(0);
    if (!globals().quiet) {
      sample::Summary sum = sampler.summary();
      if (sum.nvml && sum.primary_gpu >= 0)
        fmt::print(stderr, "trainscope: GPU {}: {}\n", sum.primary_gpu, sum.pattern_reading);
      if (!recording.empty()) fmt::print(stderr, "trainscope: {} ticks {}\n", sum.ticks, recording);
    }
  });
}

}  // namespace ts::cli
