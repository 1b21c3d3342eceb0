#pragma once
// The interpreter the real-run tests start: TRAINSCOPE_TEST_PYTHON when set (ctest sets it to
// Debian's /usr/bin/python3, PyTorch 1.13, for the suites that also run on the oldest version we
// support), else the checkout's .venv (PyTorch 2.x, made by scripts/bootstrap: TS_TORCH_PYTHON),
// else /usr/bin/python3. Empty when none of them has torch: the tests then fail, saying so.
//
// torch is found, not imported: `import torch` costs about a second of CPU, and ctest starts a
// process per test (about 300 of them start a Python), two at a time on two cores. A torch that is
// installed but broken fails the test's own run instead, with its error.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ts::test {

// Runs PY with a one-line program; its stdout, trimmed ("" when it could not start or failed).
inline std::string python_says(const std::string& py, const std::string& program) {
  if (py.empty()) return {};
  std::string cmd = "'" + py + "' -c '" + program + "' 2>/dev/null";
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, f)) out += buf;
    if (pclose(f) != 0) out.clear();
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The installed torch's version as its package metadata says ("2.13.0+cpu", Debian's
// "1.13.0a0+gitunknown"); "" when PY has no torch.
inline std::string installed_torch(const std::string& py) {
  return python_says(py,
                     "import importlib.metadata as m, importlib.util as u\n"
                     "if u.find_spec(\"torch\"): print(m.version(\"torch\"))");
}

inline bool has_torch(const std::string& py) { return !installed_torch(py).empty(); }

inline const std::string& torch_python() {
  static const std::string py = [] {
    if (const char* forced = std::getenv("TRAINSCOPE_TEST_PYTHON"); forced && *forced)
      return has_torch(forced) ? std::string(forced) : std::string();
    for (const char* cand : {TS_TORCH_PYTHON, "/usr/bin/python3"})
      if (has_torch(cand)) return std::string(cand);
    return std::string();
  }();
  return py;
}

// The PyTorch version torch_python() has, as "2.13.0+cpu" ("" when none).
inline const std::string& torch_version() {
  static const std::string v = installed_torch(torch_python());
  return v;
}

// Debian's /usr/bin/python3 has torch (python3-torch, PyTorch 1.13).
inline bool system_python_has_torch() { return has_torch("/usr/bin/python3"); }

inline bool torch_at_least(int major, int minor) {
  const std::string& v = torch_version();
  int a = 0, b = 0;
  return std::sscanf(v.c_str(), "%d.%d", &a, &b) == 2 && (a > major || (a == major && b >= minor));
}

}  // namespace ts::test
