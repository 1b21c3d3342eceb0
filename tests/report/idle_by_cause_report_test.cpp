// The "GPU idle by cause" table in the Markdown and HTML reports (and the terminal's, which they
// share rows with), on a small synthetic trace analysed end to end. Expectations are worked out
// by hand from the timeline below (the same one tests/analysis/idle_attribution_test.cpp checks
// bucket by bucket), never taken from the program's output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/one_gap_per_cause.h"
#include "analysis/trace_analysis.h"
#include "report/idle_by_cause.h"
#include "report/report.h"

using namespace ts;

namespace {

// The timeline of analysis/one_gap_per_cause.h, as the table sees it. One step [0,1000) µs on
// one thread, one gap per cause:
//   k1 [20,100) launched [10,15)
//   gap A [100,300) 200: DataLoader.__next__ [50,250) -> data_loading 150; aten::add [250,296)
//         -> host_compute 40 until its launch cudaLaunchKernel [290,295), then the launch and
//         its latency [290,300) -> launch 10 (cudaLaunchKernel in aten::add);      k2 [300,400)
//   gap B [400,600) 200: cudaStreamSynchronize inside aten::item was open when the GPU ran dry:
//         a drain. aten::item's own [410,420) 10 is its own sync bucket; the other 190 (the sync
//         and the aten::mul work after it) go to "cudaStreamSynchronize in aten::item";  k3
//   gap C [700,720) 20 (< 50 µs): launch overhead, cudaLaunchKernel in aten::relu;  k4 [720,740)
//   gap D [740,745) 5: k5 was queued at [712,714): the GPU's own switch -> gpu_overhead;
//   gap E [800,900) 100: k6 (stream 8) queued at [715,717), no event of its stream before ->
//         unattributed ("queued before the gap ...");                                k6 [900,950)
// GPU span [20,950) = 930, busy 80+100+100+20+55+50 = 405, idle 525 in 5 gaps: 56.5% of the span.
analysis::TraceAnalysis one_gap_per_cause() {
  analysis::testing::StoreBuilder b;
  analysis::testing::add_one_gap_per_cause(b);
  return analysis::analyse(b.s);
}

struct Row {
  const char* cause;
  const char* time;
  const char* of_idle;
  const char* of_step;
  const char* top;
};
// Largest cause first. % of idle = ns / 525, % of step = ns / 1000 (the one 1000 µs step):
//   sync 200: 38.095 -> 38.1%, 20.0%        data_loading 150: 28.571 -> 28.6%, 15.0%
//   unattributed 100: 19.048 -> 19.0%, 10.0%   host_compute 40: 7.619 -> 7.6%, 4.0%
//   launch 10 + 20 = 30: 5.714 -> 5.7%, 3.0%   gpu_overhead 5: 0.952 -> 1.0%, 0.5%
// Each names its largest bucket: the 190 µs drain (not aten::item's own 10), the DataLoader (its
// own annotation, not repeated), aten::relu's 20 µs launch (not aten::add's 10).
const std::vector<Row> kRows = {
    {"sync", "200.0 µs", "38.1%", "20.0%", "cudaStreamSynchronize in aten::item"},
    {"data_loading", "150.0 µs", "28.6%", "15.0%", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"},
    {"unattributed", "100.0 µs", "19.0%", "10.0%",
     "queued before the gap, yet the GPU idled: a dependency or GPU work the trace lacks (sampled or filtered trace)"},
    {"host_compute", "40.0 µs", "7.6%", "4.0%", "aten::add"},
    {"launch", "30.0 µs", "5.7%", "3.0%", "cudaLaunchKernel in aten::relu"},
    {"gpu_overhead", "5.0 µs", "1.0%", "0.5%", "work queued ahead; the GPU's own switch between kernels"},
};

report::ReportInput input_for(analysis::TraceAnalysis t) {
  report::ReportInput in;
  in.traces.push_back(std::move(t));
  return in;
}

// Markdown escapes what it would read as emphasis: "__next__" would render as a bold "next".
std::string md_escaped(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '_') out += '\\';
    out += c;
  }
  return out;
}

// Every expected line occurs after `from`, in order; no other cause has a row.
void expect_rows_in_order(const std::string& out, size_t from, const std::vector<std::string>& lines) {
  size_t at = from;
  for (const auto& l : lines) {
    const size_t p = out.find(l, at);
    ASSERT_NE(p, std::string::npos) << "missing or out of order: " << l << "\n" << out.substr(from);
    at = p + l.size();
  }
}

}  // namespace

TEST(IdleByCauseReport, RowsFromTheTrace) {
  const auto t = one_gap_per_cause();
  ASSERT_EQ(t.gpu.idle_ns, 525'000);
  const auto rows = report::idle_cause_rows(t);
  ASSERT_EQ(rows.size(), kRows.size());
  const int64_t ns[] = {200'000, 150'000, 100'000, 40'000, 30'000, 5'000};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_STREQ(analysis::idle_cause_name(rows[i].cause), kRows[i].cause);
    EXPECT_EQ(rows[i].ns, ns[i]) << kRows[i].cause;
    EXPECT_NEAR(rows[i].pct_of_idle, 100.0 * ns[i] / 525'000, 1e-9);
    EXPECT_NEAR(rows[i].pct_of_step, 100.0 * ns[i] / 1'000'000, 1e-9);
    EXPECT_EQ(rows[i].top_event, kRows[i].top);
  }
}

TEST(IdleByCauseReport, MarkdownTable) {
  const std::string md = report::render_markdown(input_for(one_gap_per_cause()));
  const size_t h = md.find("\n### GPU idle by cause (525.0 µs idle in 5 gaps, 56.5% of the GPU's span)\n\n"
                           "| cause | time | % of idle | % of step time | largest host event |\n|---|---:|---:|---:|---|\n");
  ASSERT_NE(h, std::string::npos) << md;
  std::vector<std::string> lines;
  for (const auto& r : kRows)
    lines.push_back(std::string("| ") + r.cause + " | " + r.time + " | " + r.of_idle + " | " + r.of_step + " | " +
                    md_escaped(r.top) + " |\n");
  expect_rows_in_order(md, h, lines);
  // Exactly the six rows: the table ends after the last one.
  const size_t end = md.find(lines.back(), h) + lines.back().size();
  EXPECT_NE(md.compare(end, 2, "| "), 0) << md.substr(end);
  EXPECT_EQ(md.find("| optimizer |"), std::string::npos);  // causes without time have no row
}

TEST(IdleByCauseReport, HtmlTable) {
  const std::string html = report::render_html(input_for(one_gap_per_cause()));
  const size_t h = html.find("<div class=\"card wide\" id=\"idle-by-cause\"><h3>GPU idle by cause: 525.0 µs in 5 gaps "
                             "(56.5% of the GPU's span)</h3>");
  ASSERT_NE(h, std::string::npos) << html;
  const size_t end = html.find("</table></div>", h);
  ASSERT_NE(end, std::string::npos);
  const std::string table = html.substr(h, end - h);
  std::vector<std::string> lines;
  for (const auto& r : kRows)
    lines.push_back(std::string("<tr><td>") + r.cause + "</td><td class=\"n\">" + r.time + "</td><td class=\"n\">" + r.of_idle +
                    "</td><td class=\"n\">" + r.of_step + "</td><td class=\"mono\">" + r.top + "</td></tr>");
  expect_rows_in_order(table, 0, lines);
  size_t count = 0;
  for (size_t p = table.find("<tr><td>"); p != std::string::npos; p = table.find("<tr><td>", p + 1)) ++count;
  EXPECT_EQ(count, kRows.size());
}

TEST(IdleByCauseReport, TerminalNamesTheDataLoaderOnce) {
  const std::string out = report::render_terminal(input_for(one_gap_per_cause()), {false, 160});
  const size_t h = out.find("GPU idle by cause (525.0 µs idle in 5 gaps, 56.5% of the GPU's span)");
  ASSERT_NE(h, std::string::npos) << out;
  // "  {cause:<20}{time:>10} {idle:>6}% {step:>6}%  {event}"
  expect_rows_in_order(out, h,
                       {"  sync                  200.0 µs   38.1%   20.0%  cudaStreamSynchronize in aten::item\n",
                        "  data_loading          150.0 µs   28.6%   15.0%  enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\n",
                        "  launch                 30.0 µs    5.7%    3.0%  cudaLaunchKernel in aten::relu\n"});
}

// Names that are markup in either format come out as text: '<' of a Python frame, '|' and '*'.
TEST(IdleByCauseReport, EventNamesAreEscaped) {
  analysis::TraceAnalysis t = one_gap_per_cause();
  auto& a = t.gpu.attribution;
  for (auto& e : a.entries)
    if (e.cause == analysis::IdleCause::HostCompute) e.host_event = "<built-in method a|b*c>";
  const std::string md = report::render_markdown(input_for(t));
  EXPECT_NE(md.find("| host_compute | 40.0 µs | 7.6% | 4.0% | \\<built-in method a\\|b\\*c\\> |\n"), std::string::npos) << md;
  const std::string html = report::render_html(input_for(t));
  EXPECT_NE(html.find("<td class=\"mono\">&lt;built-in method a|b*c&gt;</td>"), std::string::npos);
}
