#include "run/kineto_markers.h"

#include <cctype>

namespace ts::run {
namespace {

constexpr char kSeverity[] = "USDT:";
constexpr size_t kSeverityLen = sizeof kSeverity - 1;
constexpr size_t kMaxMarkerLine = 512;  // Kineto's prefix and a short message: longer is not one

// Reads `n` digits at `i`, then `sep` (when not 0).
bool digits(const std::string& s, size_t& i, size_t n, char sep) {
  for (size_t k = 0; k < n; ++k, ++i)
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  if (sep == 0) return true;
  return i < s.size() && s[i++] == sep;
}

// One or more digits at `i`, then `sep`.
bool number(const std::string& s, size_t& i, char sep) {
  size_t b = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i > b && i < s.size() && s[i++] == sep;
}

}  // namespace

bool is_kineto_marker_line(const std::string& line) {
  std::string s = line;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  // Kineto's Logger prefix (libkineto/src/Logger.cpp): "USDT:" YYYY-MM-DD HH:MM:SS PID:TID FILE:LINE] MESSAGE
  if (s.compare(0, kSeverityLen, kSeverity) != 0) return false;
  size_t i = kSeverityLen;
  if (!digits(s, i, 4, '-') || !digits(s, i, 2, '-') || !digits(s, i, 2, ' ')) return false;
  if (!digits(s, i, 2, ':') || !digits(s, i, 2, ':') || !digits(s, i, 2, ' ')) return false;
  if (!number(s, i, ':') || !number(s, i, ' ')) return false;
  size_t close = s.find("] ", i);
  if (close == std::string::npos) return false;
  size_t colon = s.rfind(':', close);
  if (colon == std::string::npos || colon <= i || s.find(' ', i) < colon) return false;  // FILE has no space
  size_t j = colon + 1;
  if (!number(s, j, ']') || j != close + 1) return false;
  std::string msg = s.substr(close + 2);
  if (msg.empty()) return false;
  for (char c : msg)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;  // one word: a marker's name
  return true;
}

void KinetoMarkerFilter::feed(const char* p, size_t n, std::string& out) {
  for (size_t i = 0; i < n; ++i) {
    char c = p[i];
    if (!held_.empty()) {
      held_ += c;
      if (c == '\n') {
        if (!is_kineto_marker_line(held_)) out += held_;
        held_.clear();
        at_line_start_ = true;
        continue;
      }
      bool still = held_.size() <= kSeverityLen ? held_.compare(0, held_.size(), kSeverity, held_.size()) == 0
                                                : held_.size() <= kMaxMarkerLine;
      if (!still) {  // not a marker line after all: what was held passes, and the rest of the line
        out += held_;
        held_.clear();
        at_line_start_ = false;
      }
      continue;
    }
    if (at_line_start_ && c == kSeverity[0]) {
      held_.assign(1, c);
      continue;
    }
    out += c;
    at_line_start_ = c == '\n';
  }
}

void KinetoMarkerFilter::flush(std::string& out) {
  out += held_;
  held_.clear();
}

}  // namespace ts::run
