#pragma once
// A finding: one diagnosed problem (or the healthy verdict), with the numbers that show it,
// what it costs and the change that fixes it. Ids are stable and documented in docs/FINDINGS.md.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ts::diagnose {

enum class Severity { Info = 0, Low = 1, Medium = 2, High = 3, Critical = 4 };
const char* severity_name(Severity s);

// The four classic small/large model x simple/complex data situations, plus "not on the GPU"
// (a fault: a GPU is there and idle), "CPU-only" (no GPU to use: not a fault) and "unknown".
enum class Scenario {
  Unknown,
  NotOnGpu,                 // CUDA available, work on the CPU
  CpuOnly,                  // no CUDA device (or none the evidence names): the CPU is the device
  SmallModelSimpleData,     // 1: low CPU, low steady GPU
  SmallModelComplexData,    // 2: CPU busy loading, GPU short peaks and long idle
  LargeModelSimpleData,     // 3: GPU high and stable: compute-bound
  LargeModelComplexData,    // 4: both stressed
};
const char* scenario_id(Scenario s);     // kebab-case id
const char* scenario_title(Scenario s);  // one line for people

// The bottleneck a finding belongs to.
enum class Bottleneck { DataPipeline, HostCpu, HostSync, Transfer, Launch, Compute, Memory, Communication, Io, Config, Health, None };
const char* bottleneck_name(Bottleneck b);

struct EvidenceValue {
  std::string name;   // snake_case, e.g. "dataloader_pct"
  double value = 0;
  std::string unit;   // "%", "ms", "bytes", "count", ...
};

// A line of the user's code a finding points at (evidence.h CodeSite, as the report shows it).
struct SiteRef {
  std::string role;   // what happens there (CodeSite::role)
  std::string path;   // as shown (relative to the run's directory when inside it)
  std::string file;   // absolute
  int64_t line = 0;
  std::string function, code;
  std::string note;   // what the finding says of this line: "12 calls per step, 0.4 ms", the knob to set
  // The user's line that called this line's function (a helper that builds the DataLoader from
  // its caller's arguments); caller_line 0: none recorded.
  std::string caller_path, caller_function, caller_code;
  int64_t caller_line = 0;
  // config: an argument parser builds the settings from the command line or a file it reads
  // (CodeSite::parsed_from): the fix is a flag or a key there, no edit of this line.
  bool outside_code = false;
};

struct Finding {
  std::string id;  // stable kebab-case id, e.g. "dataloader-starvation"
  Severity severity = Severity::Info;
  double confidence = 1.0;  // 0-1
  Bottleneck bottleneck = Bottleneck::None;
  std::string title;        // one line
  std::vector<EvidenceValue> evidence;
  std::string source;       // which evidence: "trace", "agent", "samples", "lab", ...
  std::string explanation;  // one paragraph
  std::string fix;          // what to change, in words
  std::string fix_code;     // the change as code or a setting
  // Fraction of step time this finding could give back (0-1); ranks the findings.
  // After the step's account (account.h) it is the share this finding's fix removes that no other
  // finding claims: the findings' fractions add up to at most 1.
  double recoverable_fraction = 0;
  // The same claim in ms per step (recoverable_fraction x step_ms), -1 when the step is unknown;
  // and what the rule alone claimed before the account (specific causes may take some of it).
  double claimed_ms = -1, step_ms = -1, own_fraction = 0;
  // The share of the run's wall time the fix gives back (run.time_account), -1 unknown: a finding
  // about time outside the step (outside_step: evaluation, compilation) has only this; a step
  // finding gets its step share x the steps' share of the run, and the findings rank on it.
  double run_fraction = -1;
  bool outside_step = false;  // never claims step time (account.h leaves it out)
  std::string gain;  // e.g. "up to 1.6x"
  // The fix as settings `trainscope run --set` applies to the unchanged script (key, value), when
  // it can be applied at run time; `trainscope verify` re-runs with them and measures the gain.
  std::vector<std::pair<std::string, std::string>> fix_settings;
  // Where in the user's code: the lines this finding's cause and fix are at (empty: not known).
  std::vector<SiteRef> sites;
};

struct Diagnosis {
  std::vector<Finding> findings;  // ranked: most recoverable time first
  Scenario scenario = Scenario::Unknown;
  std::string scenario_reason;
  std::string verdict;  // the report's first line
  double step_ms = -1;     // the step the findings' claims are shares of (account.h); -1 unknown
  double idle_share = -1;  // its share with the GPU idle, -1 unknown
};

}  // namespace ts::diagnose
