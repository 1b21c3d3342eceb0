#pragma once
// What every rule file shares: the rule signature, the list of rules, and small helpers for
// reading the evidence. A rule returns nothing when the evidence it needs is missing.
#include <optional>
#include <string>
#include <vector>

#include "diagnose/evidence.h"
#include "diagnose/finding.h"
#include "diagnose/loader_model.h"
#include "diagnose/thresholds.h"

namespace ts::diagnose::rules {

using RuleFn = std::optional<Finding> (*)(const Evidence&);
struct RuleEntry {
  const char* id;
  RuleFn fn;
};
const std::vector<RuleEntry>& all_rules();

// One declaration per rule file (rules/<id>.cpp).
std::optional<Finding> dataloader_starvation(const Evidence&);
std::optional<Finding> cpu_bound_transforms(const Evidence&);
std::optional<Finding> not_on_gpu(const Evidence&);
std::optional<Finding> page_fault_churn(const Evidence&);
std::optional<Finding> host_sync(const Evidence&);
std::optional<Finding> pageable_memcpy(const Evidence&);
std::optional<Finding> launch_bound(const Evidence&);
std::optional<Finding> fp32_gemm(const Evidence&);
std::optional<Finding> tensor_core_shapes(const Evidence&);
std::optional<Finding> few_ops_dominate(const Evidence&);
std::optional<Finding> memory_growth(const Evidence&);
std::optional<Finding> memory_near_limit(const Evidence&);
std::optional<Finding> reserved_much_larger(const Evidence&);
std::optional<Finding> batch_too_small(const Evidence&);
std::optional<Finding> in_loop_io(const Evidence&);
std::optional<Finding> unfused_optimizer(const Evidence&);
std::optional<Finding> gpu_throttling(const Evidence&);
std::optional<Finding> thread_oversubscription(const Evidence&);
std::optional<Finding> openblas_on_intel(const Evidence&);
std::optional<Finding> data_parallel(const Evidence&);
std::optional<Finding> old_pytorch_on_ampere(const Evidence&);
std::optional<Finding> communication_bound(const Evidence&);
std::optional<Finding> nonfinite_loss(const Evidence&);
std::optional<Finding> job_failed(const Evidence&);
std::optional<Finding> no_training_step(const Evidence&);
std::optional<Finding> compute_bound(const Evidence&);
std::optional<Finding> straggler_rank(const Evidence&);
std::optional<Finding> node_mismatch(const Evidence&);
std::optional<Finding> warm_up(const Evidence&);
std::optional<Finding> gpu_idle(const Evidence&);
std::optional<Finding> periodic_evaluation(const Evidence&);
std::optional<Finding> compile_cost(const Evidence&);
std::optional<Finding> slow_start(const Evidence&);
std::optional<Finding> anomaly_detection(const Evidence&);
std::optional<Finding> worker_restarts(const Evidence&);

// ---- helpers (rule_helpers.cpp) ----

// The lab's measured samples/s for one configuration; -1 when it was not run or was skipped.
double lab_rate(const LabEvidence& lab, const std::string& name);

// The trace's idle attribution when it has one with idle time; nullptr otherwise.
const analysis::IdleAttribution* idle_attribution(const Evidence& ev);
// The largest bucket of a cause (nullptr: none), and "cudaFree in aten::conv2d ([annotation])".
const analysis::IdleEntry* top_idle_entry(const analysis::IdleAttribution& a, analysis::IdleCause c);
std::string idle_where(const analysis::IdleEntry& e);

Finding make(const char* id, Bottleneck b, const std::string& source);
void add(Finding& f, const std::string& name, double value, const std::string& unit);
// Severity from the step time a fix gives back: >= 25% high, >= 10% medium, >= 2% low, else info.
Severity severity_for(double recoverable_fraction);

// The trace's steps, when the trace has any step time.
const analysis::TraceAnalysis* trace_with_steps(const Evidence& ev);
// Share (0-100) of step time in a breakdown class; -1 without a trace.
double trace_step_pct(const Evidence& ev, int64_t analysis::Breakdown::*cls);
double trace_step_ms(const Evidence& ev);  // median step, ms; -1 unknown

// GPU utilisation 0-100 and where it came from ("trace", "samples"); -1 unknown.
struct Util {
  double pct = -1;
  std::string source;
};
Util gpu_util(const Evidence& ev);
// Whether the CPU is saturated: sampled CPU >= kCpuSaturatedPct of usable cores.
// Returns -1 unknown, else the measured percentage of the budget.
double cpu_busy_pct_of_budget(const Evidence& ev);
bool cpu_saturated(const Evidence& ev);
// The cores the job may use, one number for every rule and the report: the training processes'
// own budget measured live (affinity from sched_getaffinity and the cgroup's cpu.max quota,
// sample/cpu_budget.h) when it was, else the sampled root's budget, else its affinity; 0 unknown.
double usable_cores(const Evidence& ev);
// The job's training processes that share those cores, measured live on this host (DDP ranks,
// hogwild's mp.Process trainers; their DataLoader workers are not among them); 1 when not measured.
int training_processes_here(const Evidence& ev);
// One training process's share of the usable cores (at least 1 when any are known, 0 unknown):
// what a CPU-only loop's threads and its workers may split between them (fitted_loop_plan), since
// every other training process computes on the same cores.
int cores_per_training_process(const Evidence& ev);
// Cores other work kept busy while the job ran: the host's mean CPU use less the job's own
// processes', 0 when none or unknown (no process tree sampled). Taken as lasting: the fixed run
// shares the host with the same work.
double other_work_cores(const Evidence& ev);
// The agent saw a process with no CUDA at all: a CPU-only run by necessity, not by mistake.
bool agent_without_cuda(const Evidence& ev);
// The job's command as a shell takes it back (quoted, secrets redacted), `unknown` without one: the
// line a fix that prefixes or extends the command is written on.
std::string job_command(const Evidence& ev, const std::string& unknown);
// No GPU to wait: the agent saw no CUDA, or the trace has no GPU events. The loop itself waits,
// and a fix never moves work to a GPU.
bool cpu_only_run(const Evidence& ev);
// The agent's step data, when it measured steps.
const AgentEvidence* agent_steps(const Evidence& ev);
// The loaders' CPU time against their wall time, every process that loads (the training
// process, its workers, every rank): measured and under kLoadingWaitsCpuShare means the loading
// waits (storage, network, sleep); at or over it, it computes. -1 unknown.
double loading_cpu_share(const Evidence& ev);
bool loading_waits(const Evidence& ev);
bool loading_computes(const Evidence& ev);
// A CPU-only loop (no CUDA) that loads in the main process (num_workers=0), its loading computing:
// its CPU busy share mixes the loop's own intra-op threads with the loading, so saturation cannot
// say whether workers help. The loader model with the loop's threads fitted beside the workers
// (loader_model.h) can: its plan, from the agent's measured step, compute and batch; nullopt
// outside that case. Where the plan gains, dataloader-starvation speaks even on saturated cores
// and cpu-bound-transforms is silent; where it does not, the reverse.
std::optional<LoaderPlan> fitted_loop_plan(const Evidence& ev);
// The loader model's inputs from the agent's measurements (loader_model.h) for a loop whose
// consumer (the GPU, else the loop's compute) takes `consumer_ms` per step: the mean step, a batch's
// load (samples x __getitem__ + collate), its CPU share, the cores, the workers now, and on a
// CPU-only loop its threads, the other work and whether they are fitted. nullopt without a sample
// cost or a batch size.
std::optional<LoaderModelInput> agent_loader_model(const Evidence& ev, double consumer_ms);
// Whether the job is data-starved by any evidence (share of step, 0-100; -1 unknown).
double data_wait_pct(const Evidence& ev);
// Device name: trace, agent, "" unknown. Compute capability major*10+minor, 0 unknown.
std::string device_name(const Evidence& ev);
int compute_capability(const Evidence& ev);
// "1.2.3" -> {1,2}; unparsable -> {0,0}.
std::pair<int, int> torch_version(const std::string& v);

// ---- the user's lines (code_sites.cpp) ----
// Adds the site of `role` to the finding with `note` (nothing when the agent recorded none).
// Returns whether it did.
bool point_at(Finding& f, const Evidence& ev, const std::string& role, const std::string& note = "");
// Adds the per-call sites of these roles, most host time first (then most calls), at most `max`;
// the note says each line's calls and host time per step. Returns how many it added.
int point_at_calls(Finding& f, const Evidence& ev, const std::vector<std::string>& roles, int max = 3);
// A framework's configuration site ("transformers" / "lightning"), nullptr when none.
const CodeSite* config_site(const Evidence& ev, const std::string& framework = "");
SiteRef site_ref(const CodeSite& s, const std::string& note);
// A trace recorded with_stack=True names the innermost user Python frame of an idle bucket
// ("train.py(42): main", PyTorch's python_function event name): the bucket's line, where no agent
// ran (`trainscope analyze`). Returns whether the frame parsed and was added.
bool point_at_frame(Finding& f, const analysis::IdleEntry& e, const std::string& note);
// Framework settings a fix changes, each value as Python writes it ("True", "\"bf16-mixed\"", "4"; ""
// when the finding cannot size it), and why they help ("" to say nothing more). No setting: `why`
// alone is the note ("no change to dataloader_num_workers").
using Knobs = std::vector<std::pair<std::string, std::string>>;
struct KnobFix {
  Knobs set;
  std::string why;
};
// framework_knobs.cpp: the note at a framework's configuration line ("set k=v here"; for settings
// an argument parser reads, CodeSite::parsed_from, the flag or the file's key), and the fix as code
// (`args = TrainingArguments(..., k=v)`, or the user's own command with the flags added).
std::string knob_note(const CodeSite& cfg, const KnobFix& fix);
std::string knob_code(const Evidence& ev, const CodeSite& cfg, const Knobs& set);
// Points the finding at where its fix goes. Under Hugging Face Trainer the objects are built in
// the framework's code, so the line is the user's TrainingArguments(...) with `hf` (nothing
// when empty); elsewhere the object's own construction line (`role`) with `note`, plus Lightning's
// Trainer(...) with `lightning` when given (precision lives there, not in the user's module).
void point_at_fix(Finding& f, const Evidence& ev, const std::string& role, const std::string& note,
                  const KnobFix& hf = {}, const KnobFix& lightning = {});

}  // namespace ts::diagnose::rules
