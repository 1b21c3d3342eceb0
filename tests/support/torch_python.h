#pragma once
// The interpreter the real-run tests start: TRAINSCOPE_TEST_PYTHON when set (ctest sets it to
// Debian's /usr/bin/python3, PyTorch 1.13, for the suites that also run on the oldest version we
// support), else the checkout's .venv (PyTorch 2.x, made by scripts/bootstrap: TS_TORCH_PYTHON),
// else /usr/bin/python3. Empty when none of them imports torch: the tests then skip, saying so.
#include <cstdlib>
#include <string>

namespace ts::test {

inline bool imports_torch(const std::string& py) {
  std::string cmd = "'" + py + "' -c 'import torch' >/dev/null 2>&1";
  return !py.empty() && std::system(cmd.c_str()) == 0;
}

inline const std::string& torch_python() {
  static const std::string py = [] {
    if (const char* forced = std::getenv("TRAINSCOPE_TEST_PYTHON"); forced && *forced)
      return imports_torch(forced) ? std::string(forced) : std::string();
    for (const char* cand : {TS_TORCH_PYTHON, "/usr/bin/python3"})
      if (imports_torch(cand)) return std::string(cand);
    return std::string();
  }();
  return py;
}

// The PyTorch version torch_python() has, as "2.13.0+cpu" ("" when none).
inline const std::string& torch_version() {
  static const std::string v = [] {
    if (torch_python().empty()) return std::string();
    std::string cmd = "'" + torch_python() + "' -c 'import torch; print(torch.__version__)' 2>/dev/null";
    std::string out;
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char buf[128];
      while (fgets(buf, sizeof buf, f)) out += buf;
      pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }();
  return v;
}

inline bool torch_at_least(int major, int minor) {
  const std::string& v = torch_version();
  int a = 0, b = 0;
  return std::sscanf(v.c_str(), "%d.%d", &a, &b) == 2 && (a > major || (a == major && b >= minor));
}

}  // namespace ts::test
