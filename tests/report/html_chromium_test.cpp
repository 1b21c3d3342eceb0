// The HTML report in a real headless Chromium (Debian's `chromium`): the page's script draws
// every chart as SVG without a JavaScript error, and a screenshot is a real, non-blank image.
// Skipped when chromium is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <vector>
#include <zlib.h>

#include "diagnose/diagnose.h"
#include "diagnose/evidence_fixtures.h"
#include "report/report.h"
#include "report/time_account_view.h"
#include "util/json_writer.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const char* kChromium = "/usr/bin/chromium";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

report::ReportInput full_input() {
  diagnose::Evidence ev;
  ev.trace = test::trace_with_steps(12, 100, 40, 55);
  auto& t = *ev.trace;
  t.kernels.top = {{"volta_scudnn_128x64_relu_interior_nn_v1", 1200, 140'000'000, 100'000, 21.2},
                   {"volta_sgemm_128x64_nn", 500, 90'000'000, 180'000, 13.6},
                   {"void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float>>", 9000, 40'000'000, 4'000, 6.1}};
  t.memory.present = true;
  for (int i = 0; i < 12; ++i) {
    t.memory.allocated_at_step_end.push_back((2000 + 40 * i) * 1048576LL);
    t.steps.steps[i].mem_allocated_end = t.memory.allocated_at_step_end.back();
  }
  t.memory.slope_bytes_per_step = 40 * 1048576.0;
  t.memory.peak_allocated = 2500 * 1048576LL;
  t.memory.peak_reserved = 3000 * 1048576LL;
  t.memory.device_total = 16LL << 30;
  diagnose::SamplesEvidence s;
  s.nvml = true;
  s.gpus = 1;
  s.gpu_util_mean_pct = 55;
  s.cpu_cores = 8;
  s.host_cpu_mean_pct = 30;
  for (int i = 0; i <= 120; ++i) {
    double tt = i * 0.01;
    s.series.t_s.push_back(tt);
    s.series.gpu_util_pct.push_back((i % 10) < 6 ? 95 : 5);
    s.series.cpu_util_pct.push_back((i % 10) < 6 ? 20 : 90);
  }
  for (int i = 0; i < 12; ++i) s.step_start_s.push_back(i * 0.1);
  ev.samples = s;
  auto in = report::from_evidence(ev, diagnose::diagnose(ev));
  in.ranks = {{"rank0.json", 0, 12, 100, 5, 45, 2, false}, {"rank1.json", 1, 12, 130, 3, 40, 0, true}};
  return in;
}

class ChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kChromium, X_OK) != 0) GTEST_FAIL() << "chromium not installed (scripts/bootstrap installs it)";
    dir_ = fs::temp_directory_path() / fmt::format("ts_html_test_{}", getpid());
    fs::create_directories(dir_);
    html_ = dir_ / "report.html";
    report::write_file(html_.string(), report::render_html(full_input()));
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // Runs chromium headless on the report with a fresh profile; returns its exit status.
  int chromium(const std::string& args, const std::string& out, const std::string& err, const std::string& fragment = "") {
    std::string cmd = fmt::format(
        "timeout 120 {} --headless --no-sandbox --disable-gpu --disable-background-networking "
        "--disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage "
        "--user-data-dir={} --enable-logging=stderr --v=0 {} file://{}{} > {} 2> {}",
        kChromium, (dir_ / fmt::format("profile{}", runs_++)).string(), args, html_.string(), fragment, out, err);
    return std::system(cmd.c_str());
  }
  fs::path dir_, html_;
  int runs_ = 0;
};

}  // namespace

TEST_F(ChromiumTest, ChartsRenderWithoutErrors) {
  std::string dom = (dir_ / "dom.html").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium("--virtual-time-budget=5000 --dump-dom", dom, log), 0) << slurp(log);
  std::string d = slurp(dom);
  ASSERT_FALSE(d.empty()) << slurp(log);
  // The script marks the <html> element (the hook's own source also names the attribute).
  size_t open = d.find("<html"), close = d.find('>', open);
  ASSERT_NE(open, std::string::npos);
  std::string html_tag = d.substr(open, close - open + 1);
  EXPECT_EQ(html_tag.find("data-js-error"), std::string::npos) << html_tag;
  // breakdown, util, step-bars, memory, kernels, ranks
  EXPECT_NE(html_tag.find("data-charts-rendered=\"6\""), std::string::npos) << html_tag;
  EXPECT_EQ(count(d, "<svg viewBox"), 6u);
  // 12 steps x 3 non-empty classes in the stacked bars alone.
  EXPECT_GE(count(d, "<rect"), 36u);
  std::string l = slurp(log);
  EXPECT_EQ(l.find("Uncaught"), std::string::npos) << l;
  EXPECT_EQ(l.find(":ERROR:CONSOLE"), std::string::npos) << l;
}

TEST_F(ChromiumTest, ScreenshotIsARealImage) {
  std::string png = (dir_ / "shot.png").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium(fmt::format("--virtual-time-budget=5000 --hide-scrollbars --window-size=1280,2200 --screenshot={}", png),
                     (dir_ / "out.txt").string(), log),
            0)
      << slurp(log);
  std::string img = slurp(png);
  ASSERT_GT(img.size(), 24u) << slurp(log);
  EXPECT_EQ(img.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(img[at])) << 24) | (uint32_t(uint8_t(img[at + 1])) << 16) | (uint32_t(uint8_t(img[at + 2])) << 8) |
           uint32_t(uint8_t(img[at + 3]));
  };
  EXPECT_EQ(be32(16), 1280u);  // IHDR width
  EXPECT_EQ(be32(20), 2200u);  // IHDR height
  // A blank page compresses to a few KB; charts, text and colour do not.
  EXPECT_GT(img.size(), 60'000u);
  // Keep a copy to look at: build dir / report_screenshot.png
  std::error_code ec;
  fs::copy_file(png, fs::path(TS_BINARY_DIR) / "report_screenshot.png", fs::copy_options::overwrite_existing, ec);
  fs::copy_file(html_, fs::path(TS_BINARY_DIR) / "report_example.html", fs::copy_options::overwrite_existing, ec);
}

// A `trainscope run` report without a profiler window: samples and agent only. The utilisation
// and memory charts still draw; the trace charts are not on the page.
TEST_F(ChromiumTest, RunReportWithoutTrace) {
  auto in = full_input();
  in.traces.clear();
  in.ranks.clear();
  diagnose::AgentEvidence a;
  a.steps = 30;
  a.step_ms = 100;
  for (int i = 0; i < 30; ++i) a.mem_allocated_per_step.push_back(1e9 + 4e6 * i);
  in.agent = a;
  in.command = "run";
  // The memory chart reads the agent's per-step table from the run layer's `run.agent` section
  // (the report has no second copy of the agent's numbers).
  JsonWriter w(false);
  w.begin_object().key("agent").begin_object();
  w.key("summary").begin_object().field("mem_source", "cuda").end_object();
  w.key("step_table").begin_object().array("columns", {"step", "mem_allocated", "rss"}).key("rows").begin_array();
  for (int i = 0; i < 30; ++i) w.begin_array().value(i).value(1e9 + 4e6 * i).value(3e9).end_array();
  w.end_array().end_object().end_object().end_object();
  in.extra_sections.emplace_back("run", w.take());
  report::write_file(html_.string(), report::render_html(in));
  std::string dom = (dir_ / "dom.html").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium("--virtual-time-budget=5000 --dump-dom", dom, log), 0) << slurp(log);
  std::string d = slurp(dom);
  size_t open = d.find("<html"), close = d.find('>', open);
  ASSERT_NE(open, std::string::npos);
  std::string html_tag = d.substr(open, close - open + 1);
  EXPECT_EQ(html_tag.find("data-js-error"), std::string::npos) << html_tag;
  EXPECT_NE(html_tag.find("data-charts-rendered=\"2\""), std::string::npos) << html_tag;
  EXPECT_EQ(count(d, "<svg viewBox"), 2u);
  // The memory chart drew the 30 agent steps (one dot each), not the "no memory" message.
  EXPECT_NE(d.find("allocated per step (agent)"), std::string::npos);
  EXPECT_EQ(count(d, "<circle"), 30u);
}

// `trainscope analyze A B --html`: two real traces (TensorBoard's ResNet-50, 0 and 4 workers).
// Every trace gets its own panel with its six charts; the address's #trace-1 opens the second.
TEST_F(ChromiumTest, TwoTraceReportChartsEveryTrace) {
  const std::string data = TS_TEST_DATA;
  std::string a = data + "/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";
  std::string b = data + "/tb_resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz";
  std::string cmd = fmt::format("{} -q analyze {} {} --html {} > {} 2>&1", TS_CLI, a, b, html_.string(), (dir_ / "cli.txt").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "cli.txt");
  std::string dom = (dir_ / "dom.html").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium("--virtual-time-budget=5000 --dump-dom", dom, log, "#trace-1"), 0) << slurp(log);
  std::string d = slurp(dom);
  size_t open = d.find("<html"), close = d.find('>', open);
  ASSERT_NE(open, std::string::npos) << slurp(log);
  std::string html_tag = d.substr(open, close - open + 1);
  EXPECT_EQ(html_tag.find("data-js-error"), std::string::npos) << html_tag;
  // 2 traces x (breakdown, GPU busy per step, step bars, GPU timeline, memory, kernels) = 12,
  // less one: the 0-worker trace's allocated memory is 0 at every step end (relative totals), so
  // its memory chart says so instead of drawing; the 4-worker one has a 19 MB blip at step 1. Both
  // traces have steps with GPU events, so both draw a timeline. No per-rank chart: two runs
  // recorded a day apart are not the ranks of one job.
  EXPECT_NE(html_tag.find("data-charts-rendered=\"11\""), std::string::npos) << html_tag;
  EXPECT_EQ(d.find("data-chart=\"ranks\""), std::string::npos);
  std::string l = slurp(log);
  EXPECT_EQ(l.find("Uncaught"), std::string::npos) << l;
  EXPECT_EQ(l.find(":ERROR:CONSOLE"), std::string::npos) << l;
  // Each panel holds its own drawn charts (cut the DOM at the panels' starts).
  size_t p0 = d.find("id=\"trace-0\""), p1 = d.find("id=\"trace-1\"");
  ASSERT_NE(p0, std::string::npos);
  ASSERT_NE(p1, std::string::npos);
  ASSERT_LT(p0, p1);
  std::string panel0 = d.substr(p0, p1 - p0), panel1 = d.substr(p1);
  EXPECT_EQ(count(panel0, "<svg viewBox"), 5u);  // 6 charts less the memory one
  EXPECT_EQ(count(panel1, "<svg viewBox"), 6u);
  EXPECT_NE(panel0.find("did not change"), std::string::npos);
  // Different traces, different bars: the starved run's DataLoader class shows in its own panel.
  EXPECT_NE(panel0.find("DataLoader"), std::string::npos);
  // Each GPU timeline has its axis: the share of the step, 0% to 100% in quarters under the rows.
  for (const std::string* p : {&panel0, &panel1}) {
    size_t at = p->find("share of the step");
    ASSERT_NE(at, std::string::npos);
    size_t svg = p->rfind("<svg viewBox", at);
    ASSERT_NE(svg, std::string::npos) << "no chart before the timeline's axis title";
    std::string timeline = p->substr(svg, at - svg);
    for (const char* tick : {">0%</text>", ">25%</text>", ">50%</text>", ">75%</text>", ">100%</text>"})
      EXPECT_NE(timeline.find(tick), std::string::npos) << tick;
  }
  // #trace-1 selected the second tab: the first panel is hidden, the second is not.
  std::string tag0 = d.substr(d.rfind('<', p0), d.find('>', p0) - d.rfind('<', p0));
  std::string tag1 = d.substr(d.rfind('<', p1), d.find('>', p1) - d.rfind('<', p1));
  EXPECT_NE(tag0.find("hidden"), std::string::npos) << tag0;
  EXPECT_EQ(tag1.find("hidden"), std::string::npos) << tag1;
  EXPECT_NE(d.find("data-tab=\"1\" title=\"" + b + "\" aria-selected=\"true\""), std::string::npos);
}

// `trainscope analyze <DDP rank 0 trace> --html` (the NCCL fixture, 3 steps): the GPU timeline
// draws one strip per step with the idle gaps' host events on hover, and the bound-by and
// collectives cards are on the page with their figures (docs/ANALYSES.md 9a-9c).
TEST_F(ChromiumTest, TimelineBoundAndCollectivesOnARealTrace) {
  const std::string trace = std::string(TS_TEST_DATA) + "/hta_nccl_parser_config_nccl_data.json.gz";
  std::string cmd = fmt::format("{} -q analyze {} --html {} > {} 2>&1", TS_CLI, trace, html_.string(), (dir_ / "cli.txt").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "cli.txt");
  std::string dom = (dir_ / "dom.html").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium("--virtual-time-budget=5000 --dump-dom", dom, log), 0) << slurp(log);
  std::string d = slurp(dom);
  size_t open = d.find("<html"), close = d.find('>', open);
  ASSERT_NE(open, std::string::npos) << slurp(log);
  std::string html_tag = d.substr(open, close - open + 1);
  EXPECT_EQ(html_tag.find("data-js-error"), std::string::npos) << html_tag;
  std::string l = slurp(log);
  EXPECT_EQ(l.find("Uncaught"), std::string::npos) << l;
  // The timeline chart was drawn: one labelled row per step (steps 4, 5, 6).
  size_t tl = d.find("data-chart=\"timeline\"");
  ASSERT_NE(tl, std::string::npos);
  std::string chart = d.substr(tl, d.find("</svg>", tl) - tl);
  EXPECT_NE(chart.find("data-rendered=\"1\""), std::string::npos);
  for (const char* step : {">step 4 · ", ">step 5 · ", ">step 6 · "}) EXPECT_NE(chart.find(step), std::string::npos) << step;
  // Hover text: the GPU's busy share, and for idle runs the cause and the host event.
  EXPECT_NE(chart.find("<title>step 4 · "), std::string::npos);
  EXPECT_NE(chart.find("idle: "), std::string::npos);
  EXPECT_GE(count(chart, "<rect"), 30u);  // a 220 ms step at 600 bins: many busy/idle runs
  // The server-rendered cards: every step is CPU-bound; 15 all-reduces (3 steps x 5 buckets).
  EXPECT_NE(d.find("Bound by: CPU-bound"), std::string::npos);
  size_t coll = d.find("id=\"collectives\"");
  ASSERT_NE(coll, std::string::npos);
  EXPECT_NE(d.find("<td class=\"mono\">allreduce</td><td>Float</td><td class=\"n\">2</td><td class=\"n\">15</td>", coll),
            std::string::npos);
}

namespace {

// A PNG as Chromium writes it (8-bit RGB or RGBA, not interlaced) decoded to RGB rows: the IDAT
// stream inflated (zlib) and each scanline's filter undone (PNG spec, section 9).
struct Image {
  uint32_t w = 0, h = 0;
  std::vector<uint8_t> rgb;  // w x h x 3
  const uint8_t* at(uint32_t x, uint32_t y) const { return &rgb[(size_t(y) * w + x) * 3]; }
};

Image decode_png(const std::string& png) {
  Image im;
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  std::string idat;
  int channels = 0;
  for (size_t p = 8; p + 8 <= png.size();) {
    const uint32_t len = be32(p);
    const std::string type = png.substr(p + 4, 4);
    if (type == "IHDR") {
      im.w = be32(p + 8), im.h = be32(p + 12);
      const int depth = uint8_t(png[p + 16]), color = uint8_t(png[p + 17]), interlace = uint8_t(png[p + 20]);
      if (depth != 8 || interlace != 0 || (color != 2 && color != 6)) return {};
      channels = color == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat += png.substr(p + 8, len);
    }
    p += 12 + len;
  }
  const size_t stride = size_t(im.w) * channels;
  std::vector<uint8_t> raw((stride + 1) * im.h);
  uLongf n = raw.size();
  if (channels == 0 || uncompress(raw.data(), &n, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK)
    return {};
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  im.rgb.resize(size_t(im.w) * im.h * 3);
  for (uint32_t y = 0; y < im.h; ++y) {
    const uint8_t f = raw[y * (stride + 1)];
    const uint8_t* line = &raw[y * (stride + 1) + 1];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(channels) ? cur[i - channels] : 0, b = prev[i],
                c = i >= size_t(channels) ? prev[i - channels] : 0;
      int pred = 0;
      if (f == 1) pred = a;
      else if (f == 2) pred = b;
      else if (f == 3) pred = (a + b) / 2;
      else if (f == 4) {
        const int p0 = a + b - c, pa = std::abs(p0 - a), pb = std::abs(p0 - b), pc = std::abs(p0 - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = uint8_t(line[i] + pred);
    }
    for (uint32_t x = 0; x < im.w; ++x)
      for (int k = 0; k < 3; ++k) im.rgb[(size_t(y) * im.w + x) * 3 + k] = cur[x * channels + k];
    prev.swap(cur);
  }
  return im;
}

bool near(const uint8_t* px, uint32_t rgb) {
  return std::abs(px[0] - int(rgb >> 16)) <= 6 && std::abs(px[1] - int((rgb >> 8) & 255)) <= 6 &&
         std::abs(px[2] - int(rgb & 255)) <= 6;
}

}  // namespace

// The run timeline (issue 40) as Chromium paints it: on the screenshot's row through the bar,
// each bucket's colour spans a width in proportion to its seconds (compile 40 s against the
// training steps' 12 s), in run order.
TEST_F(ChromiumTest, RunTimelineRendersEveryBucketInProportion) {
  report::ReportInput in;
  in.command = "run";
  diagnose::AgentEvidence a;
  diagnose::TimeAccount t;
  t.before_first_step_s = 4, t.compile_s = 40, t.train_steps_s = 12, t.data_wait_s = 1, t.eval_s = 3;
  t.checkpoint_s = 0.2, t.other_s = 0.8, t.total_s = 61, t.goodput_pct = 100 * 12 / 61.0;
  a.time_account = t;
  in.agent = a;
  report::write_file(html_.string(), report::render_html(in));
  std::string png = (dir_ / "timeline.png").string(), log = (dir_ / "log.txt").string();
  ASSERT_EQ(chromium(fmt::format("--virtual-time-budget=3000 --hide-scrollbars --window-size=1280,700 --screenshot={}", png),
                     (dir_ / "out.txt").string(), log),
            0)
      << slurp(log);
  Image im = decode_png(slurp(png));
  ASSERT_EQ(im.w, 1280u) << "not a PNG Chromium writes (8-bit RGB/RGBA)";
  // The CSS colours of html_assets.cpp (.acc-*): start-up, compile, steps, eval.
  const uint32_t startup = 0x8c8c8c, compile = 0xb05cc8, steps = 0x2e8b57, eval = 0x3c78d8;
  int row = -1;
  for (uint32_t y = 0; y < im.h && row < 0; ++y)
    for (uint32_t x = 0; x < im.w; ++x)
      if (near(im.at(x, y), compile)) {
        row = int(y) + 3;  // inside the bar, past any anti-aliased edge
        break;
      }
  ASSERT_GE(row, 0) << "no compile-coloured pixel on the page";
  auto span = [&](uint32_t rgb, int& first) {
    int n = 0;
    first = -1;
    for (uint32_t x = 0; x < im.w; ++x)
      if (near(im.at(x, uint32_t(row)), rgb)) {
        if (first < 0) first = int(x);
        ++n;
      }
    return n;
  };
  int f_startup, f_compile, f_steps, f_eval;
  const int n_startup = span(startup, f_startup), n_compile = span(compile, f_compile), n_steps = span(steps, f_steps),
            n_eval = span(eval, f_eval);
  // Labels are painted over wide bars in white: those pixels are not the bar's colour; allow for them.
  ASSERT_GT(n_steps, 0);
  ASSERT_GT(n_eval, 0);
  ASSERT_GT(n_startup, 0);
  EXPECT_NEAR(double(n_compile) / n_steps, 40.0 / 12.0, 0.15 * 40.0 / 12.0);
  EXPECT_NEAR(double(n_eval) / n_steps, 3.0 / 12.0, 0.15 * 3.0 / 12.0 + 0.02);
  EXPECT_LT(f_startup, f_compile);
  EXPECT_LT(f_compile, f_steps);
  EXPECT_LT(f_steps, f_eval);
}
