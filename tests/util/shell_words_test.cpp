// Quoting a command for a POSIX shell (util/shell_words.h): each expected word is written by hand
// from sh's quoting rules (a single-quoted word keeps every character; a quote is closed, escaped
// and reopened).
#include "util/shell_words.h"

#include <gtest/gtest.h>

TEST(ShellWords, PlainWordsStayAsTheyAre) {
  EXPECT_EQ(ts::shell_join({"/opt/venv/bin/python", "main.py", "--epochs", "2", "--lr=3e-4"}),
            "/opt/venv/bin/python main.py --epochs 2 --lr=3e-4");
}

TEST(ShellWords, SpacesQuotesAndExpansionsAreSingleQuoted) {
  EXPECT_EQ(ts::shell_quote("my data/x.txt"), "'my data/x.txt'");
  EXPECT_EQ(ts::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(ts::shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(ts::shell_quote("a*b"), "'a*b'");
  EXPECT_EQ(ts::shell_quote(""), "''");
  EXPECT_EQ(ts::shell_join({"python", "-c", "print(1)"}), "python -c 'print(1)'");
}
