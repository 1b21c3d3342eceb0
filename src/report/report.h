#pragma once
// What every report formats: the diagnosis and the evidence behind it. Reports compute nothing:
// each one lays out these values (terminal, JSON, Markdown, HTML). docs/SCHEMA.md documents
// the JSON form, which the HTML report also embeds and draws its charts from.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnose/evidence.h"
#include "diagnose/finding.h"

namespace ts::report {

inline constexpr const char* kSchemaId = "trainscope.report/2";

// One row of the per-rank table (several traces of one job).
struct RankLine {
  std::string path;
  int rank = -1;
  int64_t steps = 0;
  double median_step_ms = 0, comm_ms_per_step = 0, idle_pct = 0, wait_ms_per_step = 0;
  bool straggler = false;
  // From the run layer's per-rank agent records / RanksEvidence (-1 / 0: unknown).
  int local_rank = -1;
  int64_t pid = 0;
  double data_wait_ms = -1, backward_ms = -1, busy_ms = -1;
  double rss_max_bytes = -1;  // the rank's peak RSS over its steps
  int threads = -1;           // its threads when the run measured them live
  std::string node{};         // its node in a multi-node job (`report DIR`), "" otherwise
  double compute_ms = -1;     // busy time less data wait (`report DIR`), -1 unknown
  // From the traces' collectives (analysis::match_collectives; -1: not matched).
  int64_t last_arrivals = -1;
  double collective_wait_ms_per_step = -1;
};

struct ReportInput {
  std::string command = "analyze";  // the command that made it ("analyze", "run", ...)
  diagnose::Diagnosis diagnosis;
  std::vector<analysis::TraceAnalysis> traces;  // one per rank / file; may be empty
  std::vector<RankLine> ranks;                  // filled when there are >= 2 traces
  std::optional<analysis::CollectiveArrival> arrival;  // ranks of one job, from their traces
  std::optional<diagnose::SamplesEvidence> samples;
  std::optional<diagnose::AgentEvidence> agent;
  std::optional<diagnose::LabEvidence> lab;
  std::optional<diagnose::LoaderSweepEvidence> loader;
  // Sections other layers add to the JSON report, as (key, already-serialised JSON value):
  // e.g. the run layer's "run". Documented in docs/SCHEMA.md by their owners.
  std::vector<std::pair<std::string, std::string>> extra_sections;
  // Lines shown before the findings under a heading of their own (the job of `report DIR`: its
  // identity, what is wrong with the directory, the slowest node); HTML and terminal.
  std::string preface_title;
  std::vector<std::string> preface;
  int top = 10;  // rows in top-N tables
};

// Fills the evidence parts of a ReportInput from one Evidence (the trace goes to traces[0]).
ReportInput from_evidence(const diagnose::Evidence& ev, diagnose::Diagnosis d);

std::string render_json(const ReportInput& in, bool pretty = true);
std::string render_markdown(const ReportInput& in);
std::string render_html(const ReportInput& in);

struct TerminalStyle {
  bool color = false;
  int width = 100;
};
// Colour and width for a stream: colour only on a TTY (and not with --no-color / NO_COLOR),
// width from the terminal, 100 columns otherwise.
// COLUMNS, when set, overrides the width (on a TTY or not).
TerminalStyle detect_terminal(int fd, bool no_color);
std::string render_terminal(const ReportInput& in, const TerminalStyle& style);
// Re-wraps every line wider than `width` columns (colour escapes take none) at spaces, the rest
// indented under the line's own indent + 2; a word wider than the line is cut into pieces.
std::string fit_lines(const std::string& text, int width);

// Writes a report file; throws ts::UserError naming the file when it cannot be written.
void write_file(const std::string& path, const std::string& content);

}  // namespace ts::report
