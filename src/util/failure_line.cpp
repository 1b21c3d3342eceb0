#include "util/failure_line.h"

#include <algorithm>
#include <cctype>
#include <csignal>

namespace ts {

namespace {

// A line with no letter or digit says nothing: blank, or a banner (torchrun's row of asterisks).
bool blank(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c); });
}
bool indented(const std::string& s) { return !s.empty() && (s[0] == ' ' || s[0] == '\t'); }

}  // namespace

std::string failure_line(const std::vector<std::string>& tail, bool traceback_only) {
  size_t last = tail.size();
  while (last > 0 && blank(tail[last - 1])) --last;
  if (last == 0) return "";
  // The last traceback's header; its frames are indented ("  File ...", the source line, carets).
  for (size_t i = last; i-- > 0;) {
    if (tail[i].rfind("Traceback (most recent call last):", 0) != 0) continue;
    size_t j = i + 1;
    while (j < last && indented(tail[j])) ++j;
    if (j > i + 1 && j < last && !blank(tail[j])) return tail[j];
    break;  // a traceback cut short: no exception line to find
  }
  return traceback_only ? "" : tail[last - 1];
}

bool signal_from_outside(int signal) {
  return signal == SIGTERM || signal == SIGKILL || signal == SIGINT || signal == SIGHUP;
}

}  // namespace ts
