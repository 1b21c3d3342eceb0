#pragma once
// The experiments' real-run tests need Debian's /usr/bin/python3 with torch (1.13 on CPU here).
#include <cstdlib>
#include <string>

namespace ts::test {

inline const std::string& torch_python() {
  static const std::string py = [] {
    const char* p = "/usr/bin/python3";
    std::string cmd = std::string(p) + " -c 'import torch' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? std::string(p) : std::string();
  }();
  return py;
}

#define TS_REQUIRE_TORCH()                                                                        \
  if (ts::test::torch_python().empty())                                                           \
  GTEST_SKIP() << "needs /usr/bin/python3 with torch (Debian python3-torch); not installed here"

}  // namespace ts::test
