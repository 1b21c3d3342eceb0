// The run's time account as the reports show it: the strip's letters are the buckets' shares, the
// HTML timeline draws every bucket on one axis (widths from the shares), the terminal names them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "report/report.h"
#include "report/time_account_view.h"

namespace ts::report {
namespace {

diagnose::TimeAccount account() {
  diagnose::TimeAccount t;
  t.before_first_step_s = 4;
  t.compile_s = 40;
  t.train_steps_s = 12;
  t.data_wait_s = 1;
  t.eval_s = 3;
  t.checkpoint_s = 0.2;
  t.other_s = 0.8;
  t.total_s = 61;
  t.goodput_pct = 100 * 12 / 61.0;
  return t;
}

TEST(TimeAccountView, StripSharesAddUpToTheWidth) {
  const std::string s = account_strip(account(), 61);
  ASSERT_EQ(s.size(), 61u);
  EXPECT_EQ(std::count(s.begin(), s.end(), 'c'), 40);
  EXPECT_EQ(std::count(s.begin(), s.end(), '#'), 12);
  EXPECT_EQ(std::count(s.begin(), s.end(), 's'), 4);
  EXPECT_EQ(std::count(s.begin(), s.end(), 'e'), 3);
  // Run order: start-up before compilation before the steps.
  EXPECT_LT(s.find('s'), s.find('c'));
  EXPECT_LT(s.find('c'), s.find('#'));
  // A bucket of >= 1% shows even on a narrow strip.
  const std::string narrow = account_strip(account(), 20);
  EXPECT_EQ(narrow.size(), 20u);
  EXPECT_NE(narrow.find('d'), std::string::npos);
}

TEST(TimeAccountView, LineNamesEveryBucketAndTheGoodput) {
  const std::string l = account_line(account());
  for (const char* w : {"start-up 4.0 s", "compile 40.0 s (66%)", "training steps 12.0 s", "evaluation 3.0 s", "goodput 20%"})
    EXPECT_NE(l.find(w), std::string::npos) << w << " in " << l;
}

// The loop's own loading queued for a core is said where it is a tenth of the wait or more.
TEST(TimeAccountView, LineSaysHowMuchOfTheWaitWasQueuedForACore) {
  auto t = account();
  EXPECT_EQ(account_line(t).find("queued for a core"), std::string::npos);
  t.data_queued_s = 0.4;
  EXPECT_NE(account_line(t).find("data wait 1.0 s (2%), 0.4 s of it loading queued for a core"), std::string::npos)
      << account_line(t);
  t.data_queued_s = 0.05;  // a twentieth: not worth a word
  EXPECT_EQ(account_line(t).find("queued for a core"), std::string::npos);
}

// The first batches of newly started workers are said where they are a tenth of the data wait.
TEST(TimeAccountView, LineSaysHowMuchOfTheWaitWasTheWorkersFirstBatches) {
  auto t = account();
  EXPECT_EQ(account_line(t).find("newly started workers"), std::string::npos);
  t.data_start_s = 0.7;
  t.data_starts = 3;
  EXPECT_NE(account_line(t).find("data wait 1.0 s (2%), 0.7 s of it for newly started workers' first batches "
                                 "(3 starts)"),
            std::string::npos)
      << account_line(t);
  t.data_start_s = 0.05;  // a twentieth: not worth a word
  EXPECT_EQ(account_line(t).find("newly started workers"), std::string::npos);
}

// Other's share that is the interpreter's exit is said where it is most of other (a short run).
TEST(TimeAccountView, LineSaysHowMuchOfOtherWasTheInterpretersExit) {
  auto t = account();
  EXPECT_EQ(account_line(t).find("interpreter's exit"), std::string::npos);
  t.exit_s = 0.6;
  EXPECT_NE(account_line(t).find("other 0.8 s (1%), 0.6 s of it the interpreter's exit"), std::string::npos)
      << account_line(t);
  t.exit_s = 0.1;  // an eighth of other: not what other is
  EXPECT_EQ(account_line(t).find("interpreter's exit"), std::string::npos);
}

TEST(TimeAccountView, ReportsShowTheAccount) {
  ReportInput in;
  in.command = "run";
  diagnose::AgentEvidence a;
  a.time_account = account();
  in.agent = a;
  const std::string html = render_html(in);
  EXPECT_NE(html.find("id=\"time-account\""), std::string::npos);
  for (const char* k : {"acc-before_first_step_s", "acc-compile_s", "acc-train_steps_s", "acc-eval_s", "acc-other_s"})
    EXPECT_NE(html.find(std::string("class=\"acc ") + k), std::string::npos) << k;
  EXPECT_NE(html.find("width:65.574%"), std::string::npos);  // compile: 40 of 61 s
  const std::string term = render_terminal(in, {false, 100});
  EXPECT_NE(term.find("WHERE THE RUN'S 61.0 s WENT"), std::string::npos);
  EXPECT_NE(term.find("goodput 20%"), std::string::npos);
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("## Where the run's 61.0 s went"), std::string::npos) << md;
  EXPECT_NE(md.find("| compile | 40.0 | 66% |"), std::string::npos) << md;
}

}  // namespace
}  // namespace ts::report
