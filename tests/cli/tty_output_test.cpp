// The terminal report on a real terminal and through a pipe, end to end: `trainscope analyze`
// and `trainscope run` under a pseudo-terminal (util-linux `script`, and a detached tmux pane
// 80 columns wide) colour their output and keep every line within the width; piped, the same
// report is plain text. The verdict comes first either way.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/torch_python.h"

namespace fs = std::filesystem;

namespace {

const std::string kStarvedTrace = std::string(TS_TEST_DATA) + "/tb_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz";

std::string sh(const std::string& cmd, int* code = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  if (code) *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Runs `args` on a pseudo-terminal (script's pty has no size: COLUMNS gives the width).
std::string on_pty(const std::string& args, const std::string& env = "COLUMNS=80") {
  std::string inner = fmt::format("{} {}", TS_CLI, args);
  return sh(fmt::format("env {} script -q -e -c {} /dev/null < /dev/null", env, quote(inner)));
}

std::string plain(const std::string& s) {
  static const std::regex esc("\x1b\\[[0-9;]*m");
  std::string out = std::regex_replace(s, esc, "");
  out.erase(std::remove(out.begin(), out.end(), '\r'), out.end());
  return out;
}

size_t columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

// The longest line in columns, and the first one that long (for the failure message).
std::pair<size_t, std::string> widest(const std::string& text) {
  std::pair<size_t, std::string> w{0, ""};
  std::istringstream in(plain(text));
  std::string l;
  while (std::getline(in, l))
    if (columns(l) > w.first) w = {columns(l), l};
  return w;
}

std::string first_line(const std::string& text) {
  std::istringstream in(plain(text));
  std::string l;
  while (std::getline(in, l))
    if (l.find_first_not_of(' ') != std::string::npos) return l;
  return "";
}

bool has_script() { return std::system("command -v script >/dev/null 2>&1") == 0; }
bool has_tmux() { return std::system("command -v tmux >/dev/null 2>&1") == 0; }

}  // namespace

TEST(TtyOutput, AnalyzeOnATerminalIsColouredAndFits80Columns) {
  if (!has_script()) GTEST_FAIL() << "needs util-linux script";
  std::string out = on_pty("-q analyze " + kStarvedTrace);
  EXPECT_NE(out.find("\x1b[1;7m VERDICT \x1b[0m"), std::string::npos) << out.substr(0, 400);
  EXPECT_NE(out.find("\x1b[1;31m[HIGH]\x1b[0m"), std::string::npos);  // severity in colour
  EXPECT_EQ(first_line(out).rfind(" VERDICT  GPU waiting for data", 0), 0u) << first_line(out);
  auto [w, line] = widest(out);
  EXPECT_LE(w, 80u) << line;
  EXPECT_GT(w, 70u);  // it did use the width (paragraphs wrap near the edge)
  // The same on a 60-column terminal: narrower, still whole.
  std::string narrow = on_pty("-q analyze " + kStarvedTrace, "COLUMNS=60");
  EXPECT_LE(widest(narrow).first, 60u) << widest(narrow).second;
  EXPECT_EQ(plain(narrow).find("FINDINGS (4)") != std::string::npos, plain(out).find("FINDINGS (4)") != std::string::npos);
}

TEST(TtyOutput, AnalyzePipedOrNoColorIsPlain) {
  if (!has_script()) GTEST_FAIL() << "needs util-linux script";
  std::string piped = sh(fmt::format("{} -q analyze {} | cat", TS_CLI, kStarvedTrace));
  EXPECT_EQ(piped.find('\x1b'), std::string::npos);
  EXPECT_EQ(first_line(piped).rfind(" VERDICT  GPU waiting for data", 0), 0u) << first_line(piped);
  EXPECT_LE(widest(piped).first, 100u) << widest(piped).second;  // 100 columns when nothing says otherwise
  std::string piped80 = sh(fmt::format("COLUMNS=80 {} -q analyze {} | cat", TS_CLI, kStarvedTrace));
  EXPECT_LE(widest(piped80).first, 80u) << widest(piped80).second;
  // On a terminal, --no-color and NO_COLOR turn colour off; the text is the same.
  std::string nocolor = on_pty("-q --no-color analyze " + kStarvedTrace);
  EXPECT_EQ(nocolor.find('\x1b'), std::string::npos);
  std::string env = on_pty("-q analyze " + kStarvedTrace, "COLUMNS=80 NO_COLOR=1");
  EXPECT_EQ(env.find('\x1b'), std::string::npos);
  // (up to the trace's read time, which differs run to run)
  std::string a = plain(env), b = plain(on_pty("-q analyze " + kStarvedTrace));
  EXPECT_EQ(a.substr(0, a.find("\nTRACE ")), b.substr(0, b.find("\nTRACE ")));
  EXPECT_NE(a.find("\nTRACE "), std::string::npos);
}

// tmux gives the pane a real size (80 columns, no COLUMNS in the environment): the width comes
// from the terminal itself. capture-pane -J joins lines the terminal wrapped, so a line that
// ran past the edge would show here as longer than 80.
TEST(TtyOutput, AnalyzeInAnEightyColumnTmuxPane) {
  if (!has_tmux()) GTEST_FAIL() << "needs tmux";
  std::string sock = fmt::format("ts_tty_test_{}", getpid());
  std::string cmd = fmt::format("env -u COLUMNS -u NO_COLOR {} -q analyze {}; tmux -L {} wait-for -S done; sleep 60", TS_CLI,
                                kStarvedTrace, sock);
  int code = -1;
  sh(fmt::format("tmux -L {} -f /dev/null new-session -d -s t -x 80 -y 50 {} && timeout 120 tmux -L {} wait-for done", sock,
                 quote(cmd), sock),
     &code);
  std::string pane = sh(fmt::format("tmux -L {} capture-pane -p -J -e -S - -t t", sock));
  sh(fmt::format("tmux -L {} kill-server 2>/dev/null", sock));
  ASSERT_EQ(code, 0) << pane;
  EXPECT_NE(pane.find("\x1b["), std::string::npos) << pane.substr(0, 400);
  EXPECT_EQ(first_line(pane).rfind(" VERDICT  GPU waiting for data", 0), 0u) << first_line(pane);
  std::string text = plain(pane);
  std::istringstream in(text);
  std::string l;
  size_t widest_line = 0;
  while (std::getline(in, l)) {
    while (!l.empty() && l.back() == ' ') l.pop_back();  // the pane pads with spaces
    widest_line = std::max(widest_line, columns(l));
    EXPECT_LE(columns(l), 80u) << l;
  }
  EXPECT_GT(widest_line, 70u);
  EXPECT_NE(text.find("FINDINGS (4)"), std::string::npos);
}

TEST(TtyOutput, RunOnATerminalIsColouredAndFits80ColumnsPipedIsPlain) {
  if (!has_script()) GTEST_FAIL() << "needs util-linux script";
  if (!ts::test::system_python_has_torch()) GTEST_FAIL() << "needs /usr/bin/python3 with torch";
  fs::path dir = fs::temp_directory_path() / fmt::format("ts_tty_run_{}", getpid());
  std::string args = fmt::format("-q run --no-store --no-profile --out {{}} -- /usr/bin/python3 {}/examples/data_starved.py",
                                 TS_SOURCE_DIR);
  std::string tty = on_pty(fmt::format(fmt::runtime(args), (dir / "tty").string()));
  std::string piped = sh(fmt::format("{} {} < /dev/null | cat", TS_CLI, fmt::format(fmt::runtime(args), (dir / "pipe").string())));
  fs::remove_all(dir);
  for (const auto* out : {&tty, &piped}) {
    std::string p = plain(*out);
    size_t head = p.find("trainscope run:"), verdict = p.find(" VERDICT "), findings = p.find("FINDINGS ("),
           steps = p.find("\nSteps ");
    ASSERT_NE(head, std::string::npos) << p;
    // What ran, then the verdict, then the findings, then the agent's numbers.
    EXPECT_LT(head, verdict);
    EXPECT_LT(verdict, findings);
    EXPECT_LT(findings, steps);
    EXPECT_NE(p.find("Training loop waiting for data"), std::string::npos) << p;
  }
  EXPECT_NE(tty.find("\x1b[1;7m VERDICT \x1b[0m"), std::string::npos);
  EXPECT_NE(tty.find("\x1b[1mtrainscope run\x1b[0m"), std::string::npos);
  auto [w, line] = widest(tty);
  EXPECT_LE(w, 80u) << line;
  EXPECT_EQ(piped.find('\x1b'), std::string::npos);
  EXPECT_LE(widest(piped).first, 100u) << widest(piped).second;
}
