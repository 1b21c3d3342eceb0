#pragma once
// The live view while `trainscope run` runs: a few lines at the bottom of the terminal (stderr)
// with the steps done, the median step of the last steps split into its phases (data wait, H2D,
// forward, backward, optimizer, GPU) and the rules' top finding so far. It is built from the step
// records the agent already sends (nothing more is asked of the training process) and redrawn
// from the launcher's wait loop at most kRefreshPerS times a second.
//
// It never mixes into the program's own lines: while it is on, the job's stdout (when it is the
// same terminal) and stderr both reach the terminal through us (StderrTee's pty), so we are the
// terminal's only writer and the panel's rows are always the ones right below the cursor's line.
// Before the job's bytes are written the panel's rows are erased (below the cursor's line only:
// a line the program is half-way through, a tqdm bar redrawn with \r, stays as it is), after them
// it is drawn again below wherever the cursor now is: first room is made with IND/RI (ESC D / ESC
// M: down and up a line, scrolling at the bottom, column kept), then the rows are drawn between
// DECSC and DECRC (cursor saved and restored). The scroll-back keeps every program line whole and
// in order; the panel is never in it. At the end the rows are erased before the report.
#include <sys/types.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "run/agent_records.h"
#include "run/live_status.h"

namespace ts::run {

// The panel's content, without the terminal: pure, tested on records built by hand.
class LivePanelModel {
 public:
  static constexpr size_t kWindowSteps = 200;  // the median is of the last this many steps

  void on_step(const StepRecord& s);  // any thread (the channel's reader)
  void on_gpu(const GpuRecord& g);
  void set_top_finding(std::optional<LiveFinding> f);
  // The panel's lines, each at most `width` columns (ASCII and a few UTF-8 symbols counted as one).
  std::vector<std::string> lines(size_t width, double elapsed_s) const;
  int64_t steps() const;  // steps of the process shown

 private:
  struct Phases {
    int64_t step, t_end_ns, dur_ns, wait_ns, h2d_ns, fwd_ns, bwd_ns, opt_ns, gpu_ns;
  };
  mutable std::mutex mu_;
  pid_t pid_ = 0;  // the first process that reported steps (rank 0 comes first under torchrun)
  int level_ = 0;  // its best step marker: a better one restarts the count, as the agent does
  int64_t steps_ = 0;
  std::deque<Phases> recent_;
  std::optional<LiveFinding> finding_;
};

class LivePanel {
 public:
  static constexpr int kRows = 3;
  static constexpr double kRefreshPerS = 4;

  // `fd`: our stderr. Active on a terminal of at least 8 rows and 40 columns; otherwise the panel
  // stays off (active() is false) and pass_through() only writes.
  explicit LivePanel(int fd);
  ~LivePanel();  // close()
  LivePanel(const LivePanel&) = delete;
  LivePanel& operator=(const LivePanel&) = delete;

  bool active() const { return active_; }
  LivePanelModel& model() { return model_; }
  // The job's output (StderrTee's copier thread): the panel erased, the bytes written, the panel
  // drawn again below them (its last content: no new figures are computed here).
  void pass_through(const char* p, size_t n);
  // Renders and draws when at least 1/kRefreshPerS s passed since the last render; returns whether it did.
  bool tick(double now_s);
  // Erases the panel for good (the cursor stays where the program's output ended). Idempotent.
  void close();

 private:
  void erase_locked(std::string& out);
  void draw_locked(std::string& out);
  int fd_;
  bool active_ = false;
  bool drawn_ = false;  // the rows below the cursor's line hold the panel
  int cols_ = 0;
  double started_s_ = 0, last_render_s_ = -1;
  std::vector<std::string> lines_;  // the last rendering
  std::mutex mu_;                   // one writer at a time: the tee's thread and the wait loop
  LivePanelModel model_;
};

}  // namespace ts::run
