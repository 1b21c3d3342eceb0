#pragma once
// Writes an NVML injection script (see nvml_inject.cpp: a stand-in for the NVIDIA driver)
// to a temporary file and points $NVML_INJECT_SCRIPT at it for the life of the object.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace ts::test {

class InjectScript {
 public:
  explicit InjectScript(const std::string& text) {
    char tmpl[] = "/tmp/ts_nvml_inject_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
    setenv("NVML_INJECT_SCRIPT", path_.c_str(), 1);
  }
  ~InjectScript() {
    unsetenv("NVML_INJECT_SCRIPT");
    std::remove(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ts::test
