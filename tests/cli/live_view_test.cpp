// The live view of `trainscope run` in a real terminal: tmux (a pane of its own server), driven as a
// user would (send-keys), read back with capture-pane while a real PyTorch loop
// (tests/cli/scripts/live_loop.py) trains and prints its own lines on stdout and stderr.
// Checked: the panel appears and refreshes (its step count moves while the loop runs), shows the
// step's phases and the top finding, never shares a row with the program's output, is gone
// at the end (and never in the scroll-back), and every line the program printed is there, whole
// and once, in order. Timing only decides how many snapshots see the panel, never the outcome:
// the loop runs 100 steps of about 45 ms (sleeps), the panel redraws 4 times a second.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/shell.h"
#include "support/torch_python.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> rows(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find('\n', b);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

bool have_tmux() { return std::system("tmux -V >/dev/null 2>&1") == 0; }

class LiveView : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_tmux()) GTEST_SKIP() << "needs tmux (scripts/bootstrap installs it)";
    if (ts::test::torch_python().empty()) GTEST_SKIP() << "needs a Python with torch";
    home_ = fs::temp_directory_path() / fmt::format("ts_live_view_{}_{}", getpid(),
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
    sock_ = fmt::format("ts_live_{}", getpid());
    // A plain sh in a 120x50 pane, no user config; history kept for the capture at the end.
    tmux(fmt::format("-f /dev/null new-session -d -s live -x 120 -y 50 'env -i PATH=/usr/bin:/bin HOME={} TERM=screen sh'",
                     home_.string()));
    tmux("set-option -t live history-limit 5000");
    // Type only once sh has printed its prompt: keys sent earlier are echoed by the terminal before
    // the prompt, which then shares its row with the program's first line (seen in a clean clone).
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         capture().find_first_of("#$") == std::string::npos && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  void TearDown() override {
    if (!sock_.empty()) tmux("kill-server");
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(home_, ec);
  }
  std::string tmux(const std::string& args) {
    return ts::test::run_cmd(fmt::format("tmux -u -L {} {} 2>&1", sock_, args));
  }
  // The visible screen, wrapped lines joined (-J); with `history`, the scroll-back too.
  std::string capture(bool history = false) {
    return tmux(std::string("capture-pane -p -J -t live") + (history ? " -S -" : ""));
  }
  void type(const std::string& line) {
    // send-keys -l: the text literally (no key names), then Enter.
    tmux("send-keys -t live -l " + quote(line));
    tmux("send-keys -t live Enter");
  }
  static std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  std::string run_line(const std::string& flags, int steps) {
    return fmt::format("cd {} && TRAINSCOPE_HOME={} {} run --no-profile {} -- {} {}/tests/cli/scripts/live_loop.py {}; "
                       "echo __END__ $?",
                       home_.string(), home_.string(), TS_CLI, flags, ts::test::torch_python(), TS_SOURCE_DIR, steps);
  }
  // Snapshots every 150 ms until the command line's __END__ shows (at most 180 s).
  std::vector<std::string> watch_until_end() {
    std::vector<std::string> shots;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    while (std::chrono::steady_clock::now() < deadline) {
      shots.push_back(capture());
      if (std::regex_search(shots.back(), std::regex("(^|\n)__END__ [0-9]+"))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    return shots;
  }
  // Every line the loop printed, whole and once each, in order, in the scroll-back.
  void expect_program_lines_whole(const std::string& all, int steps) {
    std::vector<std::string> expect;
    for (int s = 0; s < steps; s += 10) {
      expect.push_back(fmt::format("<out {} loss=", s));
      expect.push_back(fmt::format("<err {} still training {}>", s, s));
    }
    std::vector<std::string> got;
    const std::regex out_line("<out ([0-9]+) loss=[0-9.]+ ([0-9]+)>");
    for (const auto& r : rows(all)) {
      if (r.find("<out ") == std::string::npos && r.find("<err ") == std::string::npos) continue;
      std::smatch m;
      if (r.rfind("<out ", 0) == 0) {
        EXPECT_TRUE(std::regex_match(r, m, out_line) && m[1] == m[2]) << "not whole: [" << r << "]";
        got.push_back(r.substr(0, r.find("loss=") + 5));
      } else {
        EXPECT_EQ(r.rfind("<err ", 0), 0u) << "shares its row: [" << r << "]";
        got.push_back(r);
      }
    }
    EXPECT_EQ(got, expect) << all;
  }
  fs::path home_;
  std::string sock_;
};

}  // namespace

TEST_F(LiveView, RefreshesWhileTheLoopRunsAndKeepsItsLinesWhole) {
  constexpr int kSteps = 100;
  type(run_line("", kSteps));  // on by default: stderr is the pane, a terminal
  std::vector<std::string> shots = watch_until_end();
  const std::string last = shots.back();
  ASSERT_NE(last.find("__END__ 0"), std::string::npos) << last;

  const std::regex head("trainscope live · [0-9:]+ · step ([0-9]+) · [0-9.]+ steps/s · median step [0-9.]+ ms");
  const std::regex phases("  median ms: data wait [0-9.]+ · H2D [0-9.]+ · forward [0-9.]+ · backward [0-9.]+ · "
                          "optimizer [0-9.]+ · GPU n/a");
  std::set<int> steps_seen;
  bool saw_phases = false, saw_finding = false;
  for (const auto& shot : shots) {
    auto r = rows(shot);
    for (size_t i = 0; i < r.size(); ++i) {
      const bool panel = r[i].find("trainscope live") != std::string::npos;
      // Never on a row with the program's output.
      if (panel) {
        EXPECT_EQ(r[i].rfind("trainscope live", 0), 0u) << "shares its row: [" << r[i] << "]";
      }
      std::smatch m;
      if (!std::regex_search(r[i], m, head)) continue;
      steps_seen.insert(std::stoi(m[1]));
      // The panel's rows are together: the phases and the top finding right below its head.
      if (i + 2 < r.size()) {
        saw_phases = saw_phases || std::regex_match(r[i + 1], phases);
        saw_finding = saw_finding || r[i + 2].rfind("  top finding so far: [high] dataloader-starvation: ", 0) == 0;
        EXPECT_EQ(r[i + 2].rfind("  top finding so far: ", 0), 0u) << "[" << r[i + 2] << "]";
      }
    }
  }
  // Refreshed: several step counts while the loop ran (it runs about 5 s; 4 redraws a second).
  EXPECT_GE(steps_seen.size(), 3u) << "step counts seen: " << steps_seen.size();
  if (!steps_seen.empty()) {
    EXPECT_LE(*steps_seen.rbegin(), kSteps);
  }
  EXPECT_TRUE(saw_phases);
  // The loop waits about half of each step for its DataLoader: the rules name it while it runs.
  EXPECT_TRUE(saw_finding);

  // At the end: the panel is gone, and it never went into the scroll-back.
  const std::string all = capture(true);
  EXPECT_EQ(all.find("trainscope live"), std::string::npos) << all;
  EXPECT_NE(all.find("trainscope run: "), std::string::npos) << all;  // the report follows
  expect_program_lines_whole(all, kSteps);
}

TEST_F(LiveView, NoLiveLeavesTheTerminalAlone) {
  constexpr int kSteps = 30;
  type(run_line("--no-live", kSteps));
  std::vector<std::string> shots = watch_until_end();
  ASSERT_NE(shots.back().find("__END__ 0"), std::string::npos) << shots.back();
  for (const auto& shot : shots) {
    EXPECT_EQ(shot.find("trainscope live"), std::string::npos) << shot;
  }
  expect_program_lines_whole(capture(true), kSteps);
}

TEST(LiveViewOptions, LiveWithoutATerminalSaysSoInOneLine) {
  if (ts::test::torch_python().empty()) GTEST_SKIP() << "needs a Python with torch";
  fs::path home = fs::temp_directory_path() / fmt::format("ts_live_noterm_{}", getpid());
  fs::create_directories(home);
  auto r = ts::test::run_capture(
      fmt::format("cd {} && TRAINSCOPE_HOME={} {} run --live --no-profile --no-sample -- {} {}/tests/cli/scripts/live_loop.py 12 "
                  "< /dev/null",
                  home.string(), home.string(), TS_CLI, ts::test::torch_python(), TS_SOURCE_DIR),
      (home / "err.txt").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("trainscope: no live view: stderr is not a terminal"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("\033"), std::string::npos);  // no escape sequence in a log file
  EXPECT_NE(r.out.find("<out 10 loss="), std::string::npos) << r.out;
  // --live and --no-live together: a usage error.
  auto both = ts::test::run_capture(fmt::format("{} run --live --no-live -- true", TS_CLI), (home / "err2.txt").string());
  EXPECT_EQ(both.code, 2) << both.err;
  std::error_code ec;
  fs::remove_all(home, ec);
}
