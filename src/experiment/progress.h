#pragma once
// A one-line progress bar on stderr for sweeps: "[lab 2/3 bf16] ########.......  14/35 steps".
// On a terminal it redraws in place; otherwise it prints one line per configuration so logs stay short.
#include <string>

namespace ts::experiment {

class ProgressBar {
 public:
  ProgressBar(std::string title, int configs, bool enabled);
  ~ProgressBar();
  void start_config(int index, const std::string& label);  // index from 0
  void update(long done, long total, const std::string& detail);  // within the configuration
  void end_config(const std::string& outcome);
  void finish();

 private:
  void draw();
  std::string title_, label_, detail_;
  int configs_, index_ = 0;
  long done_ = 0, total_ = 0;
  bool enabled_, tty_, drawn_ = false;
};

}  // namespace ts::experiment
