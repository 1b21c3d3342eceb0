// The fixture of `trainscope verify`'s end-to-end tests: a store and a working folder per test,
// the CLI run in it, and the fix a verify JSON has for a finding.
#pragma once
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string>

#include "support/shell.h"

namespace ts::test {

namespace fs = std::filesystem;

using Result = ts::test::CommandResult;

inline bool have_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

class VerifyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(have_torch()) << "/usr/bin/python3 does not import torch (Debian's python3-torch: scripts/bootstrap --test)";
    home_ = fs::temp_directory_path() / fmt::format("ts_verify_cli_{}_{}", getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!home_.empty() && !HasFailure()) fs::remove_all(home_, ec);
  }
  Result cli(const std::string& args) {
    return ts::test::run_capture(fmt::format("cd {} && TRAINSCOPE_HOME={} timeout 500 {} {} < /dev/null", home_.string(),
                                             home_.string(), TS_CLI, args),
                                 (home_ / "stderr.txt").string());
  }
  static std::string example(const std::string& name) { return std::string(TS_SOURCE_DIR) + "/examples/" + name; }
  fs::path home_;
  simdjson::dom::parser parser_;
};

inline simdjson::dom::element fix_for(simdjson::dom::element doc, const std::string& id) {
  simdjson::dom::array fixes = doc["fixes"].get_array().value();
  for (auto f : fixes)
    if (std::string_view(f["finding"].get_string().value()) == id) return f;
  ADD_FAILURE() << "no fix for " << id;
  return {};
}

}  // namespace ts::test
