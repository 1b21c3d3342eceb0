#pragma once
// Each command lives in its own file and registers itself on the app here.
// A command's callback may throw ts::UserError: main prints one line and exits non-zero.
#include <CLI/CLI.hpp>

namespace ts::cli {

// Global flags every command can read.
struct Globals {
  bool quiet = false;      // no progress lines
  bool no_color = false;
};
Globals& globals();

}  // namespace ts::cli
