#pragma once
// One error type for everything the user caused (a bad file, a bad flag, a missing driver).
// The CLI prints it as a single line "trainscope: <what>" and exits non-zero; it is never a crash.
#include <stdexcept>
#include <string>

namespace ts {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what, int exit_code = 1)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace ts
