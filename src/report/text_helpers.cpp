#include "report/text_helpers.h"

#include <cmath>
#include <fmt/format.h>
#include <sstream>

#include "report/report.h"
#include "util/format.h"

namespace ts::report {

std::string format_evidence(const diagnose::EvidenceValue& e) {
  const std::string& u = e.unit;
  double v = e.value;
  auto num = [](double x) {
    if (std::fabs(x - std::round(x)) < 1e-9 && std::fabs(x) < 1e15) return fmt::format("{:.0f}", x);
    if (std::fabs(x) >= 100) return fmt::format("{:.0f}", x);
    if (std::fabs(x) >= 10) return fmt::format("{:.1f}", x);
    return fmt::format("{:.2f}", x);
  };
  if (u == "%") return fmt::format("{:.1f}%", v);
  if (u == "ms") return ts::human_ns(v * 1e6);
  if (u == "us") return ts::human_ns(v * 1e3);
  if (u == "bytes") return ts::human_bytes(v);
  if (u == "x") return fmt::format("{:.2f}x", v);
  if (u == "bool") return v != 0 ? "yes" : "no";
  if (e.name == "compute_capability") return fmt::format("{:.1f}", v);
  if (u == "count" || u.empty()) return num(v);
  if (u == "C") return fmt::format("{:.0f} °C", v);
  if (u == "bitmask") return fmt::format("0x{:x}", static_cast<unsigned long long>(v));
  return num(v) + " " + u;
}

const std::vector<std::string>& breakdown_labels() {
  static const std::vector<std::string> l = {"Kernel", "Memcpy", "Memset", "Communication",
                                             "Runtime", "DataLoader", "CPU exec", "Other"};
  return l;
}

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c == 0x1b) {  // colour escape "\033[...m" takes no columns
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string fit(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if ((c & 0xC0) != 0x80) {
      if (n + 1 >= width) break;
      ++n;
    }
    out += s[i];
  }
  return out + "…";
}

std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  size_t w = width > 10 ? width : 10;
  while (in >> word) {
    if (!line.empty() && display_width(line) + 1 + display_width(word) > w) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string fit_lines(const std::string& text, int width) {
  if (width < 20) width = 20;
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    bool ended = nl != std::string::npos;
    if (display_width(line) <= size_t(width)) {
      out += line + (ended ? "\n" : "");
      continue;
    }
    // A colour escape before the indent ("\033[2m  settings: ...") stays in front of it.
    std::string esc;
    while (line.size() > 1 && line[0] == '\033' && line[1] == '[') {
      size_t m = line.find('m');
      if (m == std::string::npos) break;
      esc += line.substr(0, m + 1);
      line.erase(0, m + 1);
    }
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || indent > size_t(width) / 2) indent = 0;
    std::string pad = std::string(indent, ' ') + esc, more(indent + 2, ' ');
    // Words wider than a line (a long path) are cut so that nothing runs past the edge.
    std::string body;
    size_t room = size_t(width) - indent - 2;
    std::istringstream words(line.substr(indent));
    std::string w;
    while (words >> w) {
      while (display_width(w) > room) {
        std::string piece = fit(w, room + 1);  // room columns + "…"
        piece.resize(piece.size() - std::string("…").size());
        body += piece + " ";
        w = w.substr(piece.size());
      }
      body += w + " ";
    }
    auto lines = wrap(body, int(room));
    for (size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? pad : more) + lines[i] + "\n";
    if (!ended && !out.empty()) out.pop_back();
  }
  return out;
}

std::string trace_title(const std::string& path, const std::string& command) {
  if (!path.empty()) return path;
  // In parentheses: not to be read as a file name.
  return command == "run" ? "(the profiler window of this run)" : "(no file name)";
}

}  // namespace ts::report
