#include "cli/watch_screen.h"

#include <curses.h>
#include <langinfo.h>

#include <algorithm>
#include <chrono>
#include <clocale>
#include <cstring>
#include <fmt/format.h>

#include "sample/pattern.h"
#include "util/format.h"

namespace ts::cli {

namespace {

using namespace std::chrono;

enum Pair { kGood = 1, kWarn, kBad, kDim, kHead };

bool g_utf8 = false;

void put(int y, int x, const std::string& s, int attr = 0) {
  if (y >= LINES || x >= COLS) return;
  if (attr) attron(attr);
  mvaddnstr(y, x, s.c_str(), static_cast<int>(s.size()));
  if (attr) attroff(attr);
}

int level_color(double pct) { return pct >= 70 ? COLOR_PAIR(kGood) : pct >= 30 ? COLOR_PAIR(kWarn) : COLOR_PAIR(kBad); }

// "[#########.....]" of `width` cells.
void bar(int y, int x, int width, double pct, int attr) {
  if (pct < 0) {
    put(y, x, "[" + std::string(width, ' ') + "] n/a", COLOR_PAIR(kDim));
    return;
  }
  int fill = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 100.0 * width));
  put(y, x, "[");
  put(y, x + 1, std::string(fill, '|'), attr);
  put(y, x + 1 + fill, std::string(width - fill, ' '));
  put(y, x + 1 + width, "]");
}

// The last `width` points as a sparkline, 0-100 scaled unless `max` is given.
std::string sparkline(const sample::Series& s, int width, double max = 100) {
  static const char* utf[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char ascii[] = " .:-=+*#@";
  std::string out;
  if (width <= 0) return out;
  size_t n = std::min<size_t>(s.size(), static_cast<size_t>(width));
  for (size_t i = s.size() - n; i < s.size(); ++i) {
    int level = static_cast<int>(std::lround(std::clamp(s[i].v / max, 0.0, 1.0) * 8));
    if (g_utf8) out += utf[level];
    else out += ascii[level];
  }
  return out;
}

std::string pct_s(double v) { return v < 0 ? "n/a" : fmt::format("{:3.0f}%", v); }

struct State {
  bool paused = false;
  int sort = 0;  // 0 cpu, 1 rss, 2 pid
};
const char* kSortNames[] = {"cpu", "rss", "pid"};

void draw(const sample::Sampler& s, const WatchScreenOptions& o, const State& st) {
  erase();
  const sample::Tick t = s.last_tick();
  const auto hist = s.gpu_history();
  const auto host_hist = s.host_history();
  const auto& info = s.gpus();
  const int W = COLS;
  int y = 0;
  std::string head = fmt::format("trainscope watch  every {} ms", s.config().interval.count());
  if (s.config().root_pid > 0) head += fmt::format("  pid {}", s.config().root_pid);
  if (!o.recording.empty()) head += "  " + o.recording;
  put(y, 0, head, A_BOLD);
  std::string keys = fmt::format("q quit  p {}  s sort:{}", st.paused ? "resume" : "pause", kSortNames[st.sort]);
  put(y, std::max(0, W - static_cast<int>(keys.size())), keys, COLOR_PAIR(kDim));
  y += 1;
  if (st.paused) put(y++, 0, "[paused: the view is frozen, sampling and recording go on]", A_REVERSE);

  const int label = 8, barw = std::clamp(W / 4, 10, 30);
  const int spark_x = label + barw + 8, spark_w = std::max(0, W - spark_x - 1);
  if (!s.nvml_available()) {
    put(y++, 0, "GPUs: " + s.nvml_error(), COLOR_PAIR(kWarn));
  }
  // Compact (2 lines per GPU) when many GPUs would not fit.
  const bool compact = info.size() * 6 + 12 > static_cast<size_t>(LINES);
  for (size_t i = 0; i < info.size() && i < t.gpus.size() && y < LINES - 4; ++i) {
    const auto& g = t.gpus[i];
    const auto& gi = info[i];
    std::string line = fmt::format("GPU {} {}", gi.index, gi.name);
    if (g.lost) {
      put(y++, 0, line + "  LOST (GPU_IS_LOST): no further readings", COLOR_PAIR(kBad) | A_BOLD);
      continue;
    }
    std::string right;
    if (g.temp_c >= 0) right += fmt::format("  {:.0f} C", g.temp_c);
    if (g.power_w >= 0) right += fmt::format("  {:.0f}/{:.0f} W", g.power_w, gi.power_limit_w);
    if (g.sm_clock_mhz >= 0) right += fmt::format("  SM {:.0f}/{:.0f} MHz", g.sm_clock_mhz, gi.sm_clock_max_mhz);
    if (g.mem_clock_mhz >= 0) right += fmt::format("  mem {:.0f} MHz", g.mem_clock_mhz);
    if (g.pcie_gen >= 0) right += fmt::format("  PCIe {}x{}", g.pcie_gen, g.pcie_width);
    put(y, 0, line, A_BOLD);
    put(y, static_cast<int>(line.size()), right);
    uint64_t slow = g.clock_reasons > 0 ? static_cast<uint64_t>(g.clock_reasons) & sample::kSlowdownReasons : 0;
    if (slow) put(y, static_cast<int>(line.size() + right.size()) + 2, "THROTTLED: " + sample::decode_clock_reasons(slow),
                  COLOR_PAIR(kBad) | A_BOLD);
    ++y;
    auto row = [&](const char* name, double v, const sample::Series& series) {
      put(y, 1, name);
      bar(y, label, barw, v, level_color(v));
      put(y, label + barw + 3, pct_s(v));
      if (!compact) put(y, spark_x, sparkline(series, spark_w), COLOR_PAIR(kHead));
      ++y;
    };
    row("util", g.util_pct, hist[i].util);
    if (!compact && gi.gpm_supported) {
      row("SM", g.sm_active_pct, hist[i].sm_active);
      row("tensor", g.tensor_active_pct, hist[i].tensor_active);
    }
    if (!compact) {
      double mp = g.mem_total_bytes > 0 && g.mem_used_bytes >= 0 ? 100.0 * g.mem_used_bytes / g.mem_total_bytes : -1;
      put(y, 1, "memory");
      bar(y, label, barw, mp, mp > 90 ? COLOR_PAIR(kBad) : COLOR_PAIR(kGood));
      put(y, label + barw + 3,
          g.mem_used_bytes < 0 ? "n/a" : fmt::format("{} / {}", human_bytes(g.mem_used_bytes), human_bytes(g.mem_total_bytes)));
      ++y;
      if (!g.processes.empty()) {
        std::string procs = " processes:";
        for (const auto& p : g.processes)
          procs += fmt::format(" {} ({})", p.pid, p.used_bytes < 0 ? "n/a" : human_bytes(p.used_bytes));
        put(y++, 0, procs);
      }
      sample::Pattern p = sample::Sampler::gpu_pattern(hist[i], 10.0);
      put(y++, 1, "pattern: " + sample::describe(p), p.kind == "sawtooth" || p.kind == "steady-low" ? COLOR_PAIR(kWarn) : 0);
    }
  }

  // Host.
  if (y < LINES - 2) {
    const auto& h = t.host;
    std::string l = fmt::format("CPU {}  {} cores usable, budget {:.1f}", pct_s(h.cpu_busy_pct), h.cpu_cores_usable,
                                h.cpu_budget_cores);
    if (h.cpu_pressure.avg10 >= 0) l += fmt::format("  pressure {:.1f}%", h.cpu_pressure.avg10);
    if (h.mem_total_bytes > 0)
      l += fmt::format("  memory {} free of {}", human_bytes(h.mem_available_bytes), human_bytes(h.mem_total_bytes));
    if (h.shm_total_bytes >= 0)
      l += fmt::format("  /dev/shm {} of {}", human_bytes(h.shm_used_bytes), human_bytes(h.shm_total_bytes));
    put(y++, 0, l, A_BOLD);
    const int cell = 22, per_row = std::max(1, W / cell);
    for (size_t c = 0; c < h.core_busy_pct.size() && y < LINES - 2; ++c) {
      int col = static_cast<int>(c % per_row);
      put(y, col * cell, fmt::format("{:>4}", fmt::format("{}", c)));
      bar(y, col * cell + 5, 10, h.core_busy_pct[c], level_color(100 - h.core_busy_pct[c]));
      put(y, col * cell + 17, pct_s(h.core_busy_pct[c]));
      if (col == per_row - 1 || c + 1 == h.core_busy_pct.size()) ++y;
    }
  }

  // Processes.
  if (s.config().root_pid > 0 && y < LINES - 2) {
    auto procs = t.processes;
    std::sort(procs.begin(), procs.end(), [&](const auto& a, const auto& b) {
      if (st.sort == 0) return a.cpu_pct > b.cpu_pct;
      if (st.sort == 1) return a.rss_bytes > b.rss_bytes;
      return a.pid < b.pid;
    });
    int threads = 0;
    double cpu = 0;
    for (const auto& p : procs) threads += p.threads, cpu += std::max(0.0, p.cpu_pct);
    put(y++, 0, fmt::format("Processes under {}: {} processes, {} threads, {:.0f}% CPU (100% = one core)   {}",
                            s.config().root_pid, procs.size(), threads, cpu, sparkline(host_hist.tree_cpu, 30, std::max(100.0, cpu))),
        A_BOLD);
    put(y++, 0, fmt::format("{:>7} {:>7} S {:>6} {:>10} {:>4} {:>8}  NAME", "PID", "PPID", "CPU%", "RSS", "THR", "NVCSW/s"),
        COLOR_PAIR(kDim));
    for (const auto& p : procs) {
      if (y >= LINES) break;
      put(y++, 0, fmt::format("{:>7} {:>7} {} {:>6} {:>10} {:>4} {:>8}  {}", p.pid, p.ppid, p.state,
                              p.cpu_pct < 0 ? "-" : fmt::format("{:.1f}", p.cpu_pct),
                              p.rss_bytes < 0 ? "-" : human_bytes(p.rss_bytes), p.threads,
                              p.nonvoluntary_per_s < 0 ? "-" : fmt::format("{:.0f}", p.nonvoluntary_per_s), p.comm));
    }
  }
  refresh();
}

}  // namespace

void run_watch_screen(const sample::Sampler& s, const WatchScreenOptions& o, const std::atomic<bool>& stop) {
  std::setlocale(LC_ALL, "");
  g_utf8 = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  if (o.color && has_colors()) {
    start_color();
    use_default_colors();
    init_pair(kGood, COLOR_GREEN, -1);
    init_pair(kWarn, COLOR_YELLOW, -1);
    init_pair(kBad, COLOR_RED, -1);
    init_pair(kDim, COLOR_CYAN, -1);
    init_pair(kHead, COLOR_BLUE, -1);
  }
  const int refresh_ms = static_cast<int>(std::max<int64_t>(100, s.config().interval.count()));
  timeout(refresh_ms);
  State st;
  const auto t0 = steady_clock::now();
  while (!stop) {
    if (!st.paused) draw(s, o, st);
    int ch = getch();
    if (ch == 'q' || ch == 'Q') break;
    if (ch == 'p' || ch == 'P' || ch == ' ') {
      st.paused = !st.paused;
      draw(s, o, st);
    }
    if (ch == 's' || ch == 'S') {
      st.sort = (st.sort + 1) % 3;
      draw(s, o, st);
    }
    if (o.duration_s > 0 && duration<double>(steady_clock::now() - t0).count() >= o.duration_s) break;
  }
  endwin();
}

}  // namespace ts::cli
