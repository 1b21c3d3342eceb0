#pragma once
// The run's time account (diagnose::TimeAccount) as the reports show it: its buckets in the order a
// run goes through them, one line of text, and a strip for the terminal.
#include <string>
#include <vector>

#include "diagnose/evidence.h"

namespace ts::report {

struct AccountPart {
  const char* key;    // the report.json field: "before_first_step_s", ...
  const char* label;  // for people: "start-up", ...
  char glyph;         // the terminal strip's letter
  double s;
};
// Every bucket, in run order (start-up, compile, steps, data wait, eval, checkpoints, other).
std::vector<AccountPart> account_parts(const diagnose::TimeAccount& t);
// "start-up 4.3 s (7%) · compile 40.2 s (65%) · ... · goodput 19%"; buckets under 0.5% left out.
std::string account_line(const diagnose::TimeAccount& t);
// A strip `width` characters wide, each bucket's share of the run in its glyph (at least one
// character for a bucket of >= 1%); legend in account_line.
std::string account_strip(const diagnose::TimeAccount& t, int width);

}  // namespace ts::report
