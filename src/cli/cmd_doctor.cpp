// trainscope doctor: a checklist to run before training (or on a running job with --pid).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>

#include "cli/commands.h"
#include "doctor/checks/checks.h"
#include "doctor/doctor.h"
#include "doctor/render.h"
#include "util/error.h"

namespace ts::cli {

void register_doctor(CLI::App& app) {
  struct Opts {
    bool json = false, verbose = false;
    std::string python;
    int pid = 0;
    double timeout = 120;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("doctor", "Check the environment before training: driver, GPUs, PyTorch/CUDA, "
                                           "BLAS/OpenMP, threads vs cores, /dev/shm, PCIe, throttling, ECC/Xid");
  cmd->footer(
      "Each check says pass / warn / fail / skip with its evidence and the fix. The PyTorch checks run a small\n"
      "probe in the target Python (import torch and numpy, a matmul on CUDA if present) and read the libraries it\n"
      "really loaded from /proc/PID/maps. --pid inspects a running job instead: its environment, libraries,\n"
      "threads and process tree, with its threads measured live for oversubscription.\n"
      "Exit status: 0 when nothing failed, 1 when a check failed. docs/DOCTOR.md lists every check.");
  cmd->add_flag("--json", o->json, "Machine-readable output (schema trainscope.doctor/1)");
  cmd->add_flag("-v,--verbose", o->verbose, "Show the evidence of every check, not only warnings and failures");
  cmd->add_option("--python", o->python,
                  "Interpreter to probe (default: $TRAINSCOPE_PYTHON, else /usr/bin/python3 if it imports torch, "
                  "else python3 on PATH)");
  cmd->add_option("--pid", o->pid, "Inspect this running training process instead of probing")->check(CLI::Range(1, 4194304));  // 1..PID_MAX_LIMIT
  cmd->add_option("--probe-timeout", o->timeout, "Seconds the Python probe may take")->capture_default_str();
  cmd->get_option("--pid")->excludes("--python");
  cmd->callback([o] {
    doctor::DoctorOptions opt;
    opt.python = o->python;
    // As lab does: an explicit interpreter first. The pip wheel's `trainscope` command sets it to the
    // Python it is installed in, the one its user trains with (not the system's /usr/bin/python3).
    if (opt.python.empty() && o->pid == 0)
      if (const char* e = std::getenv("TRAINSCOPE_PYTHON"); e && *e) opt.python = e;
    opt.pid = o->pid;
    opt.probe_timeout_s = o->timeout;
    if (!globals().quiet) opt.progress = [](const std::string& line) { fmt::print(stderr, "doctor: {}\n", line); };
    doctor::DoctorFacts facts = doctor::collect_facts(opt);
    auto checks = doctor::run_checks(facts);
    if (o->json) {
      fmt::print("{}", doctor::render_json(facts, checks));
    } else {
      bool color = !globals().no_color && isatty(STDOUT_FILENO);
      fmt::print("{}", doctor::render_text(facts, checks, color, o->verbose));
    }
    std::fflush(stdout);
    auto n = doctor::count(checks);
    if (n.fail > 0) {
      std::string ids;
      for (const auto& c : checks)
        if (c.status == doctor::Status::fail) ids += (ids.empty() ? "" : ", ") + c.id;
      throw UserError(fmt::format("doctor: {} check{} failed ({})", n.fail, n.fail == 1 ? "" : "s", ids));
    }
  });
}

}  // namespace ts::cli
