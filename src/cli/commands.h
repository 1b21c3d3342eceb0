#pragma once
// Each command lives in its own file and registers itself on the app here.
// A command's callback may throw ts::UserError: main prints one line and exits non-zero.
#include <CLI/CLI.hpp>

namespace ts::cli {

// Global flags every command can read.
struct Globals {
  bool quiet = false;      // no progress lines
  bool no_color = false;
  int exit_code = 0;       // a command's own exit status (run: the child's)
};
Globals& globals();

void register_analyze(CLI::App& app);  // cmd_analyze.cpp
void register_doctor(CLI::App& app);  // cmd_doctor.cpp
void register_serve(CLI::App& app);   // cmd_serve.cpp
void register_lab(CLI::App& app);        // cmd_lab.cpp
void register_loader(CLI::App& app);     // cmd_loader.cpp
void register_max_batch(CLI::App& app);  // cmd_max_batch.cpp
void register_compare(CLI::App& app);    // cmd_compare.cpp
void register_run(CLI::App& app);        // cmd_run.cpp
void register_runs(CLI::App& app);       // cmd_runs.cpp (list stored runs)
void register_report(CLI::App& app);     // cmd_report.cpp (show a stored run again)
void register_watch(CLI::App& app);      // cmd_watch.cpp
void register_snapshot(CLI::App& app);   // cmd_snapshot.cpp
void register_verify(CLI::App& app);     // cmd_verify.cpp (check the fixes by re-running)

}  // namespace ts::cli
