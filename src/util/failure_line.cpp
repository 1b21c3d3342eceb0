#include "util/failure_line.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <optional>
#include <stdexcept>

namespace ts {

namespace {

// A line with no letter or digit says nothing: blank, or a banner (torchrun's row of asterisks).
bool blank(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c); });
}
bool indented(const std::string& s) { return !s.empty() && (s[0] == ' ' || s[0] == '\t'); }

const char kTracebackHeader[] = "Traceback (most recent call last):";

// The index of the last of tail[0, end) that starts with `prefix`, or `end` when none does.
size_t last_starting(const std::vector<std::string>& tail, size_t end, const char* prefix) {
  for (size_t i = end; i-- > 0;)
    if (tail[i].rfind(prefix, 0) == 0) return i;
  return end;
}

// The exception line of the last traceback in tail[0, last), or "": the first unindented line
// after its header's indented frames ("  File ...", the source line, carets).
std::string traceback_exception(const std::vector<std::string>& tail, size_t last) {
  const size_t i = last_starting(tail, last, kTracebackHeader);
  if (i == last) return "";
  size_t j = i + 1;
  while (j < last && indented(tail[j])) ++j;
  if (j > i + 1 && j < last && !blank(tail[j])) return tail[j];
  return "";  // a traceback cut short: no exception line to find
}

// The first exception line written in tail[0, end): tracebacks of ranks failing together
// interleave their frames, so it is the first unindented line after a header that is not itself
// one (not the first header's own exception line).
std::string first_exception(const std::vector<std::string>& tail, size_t end) {
  bool in_traceback = false;
  for (size_t i = 0; i < end; ++i) {
    if (tail[i].rfind(kTracebackHeader, 0) == 0) in_traceback = true;
    else if (in_traceback && !indented(tail[i]) && !blank(tail[i])) return tail[i];
  }
  return "";
}

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "  rank      : 1 (local_rank: 1)" -> "1 (local_rank: 1)" when the key is `key`.
std::optional<std::string> summary_field(const std::string& line, const std::string& key) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos || trim(line.substr(0, colon)) != key) return std::nullopt;
  return trim(line.substr(colon + 1));
}

// torchrun (torch.distributed.elastic) ends a failed job with its own traceback, whose exception
// (ChildFailedError) says nothing, and a summary whose "Root Cause (first observed failure)" names
// the rank and its exit code ("-6 (pid: 8229)  (SIGABRT)"). The rank's own error is above it, its
// lines prefixed "[rank1]:" (PyTorch 2.x once the process group exists; bare before that, and in
// 1.13). Returns "rank 1: ValueError: ...", the earliest bare exception line, else
// "rank 0: exit code -6 (SIGABRT)"; "" without a summary.
struct RootCause {
  size_t at = 0;         // the summary's "Root Cause" line
  std::string rank;      // "1"
  std::string exitcode;  // "-6 (pid: 8229)  (SIGABRT)"
};

// torchrun's "Root Cause (first observed failure)" block in tail[0, last), if it names a rank.
std::optional<RootCause> root_cause(const std::vector<std::string>& tail, size_t last) {
  RootCause r;
  r.at = last_starting(tail, last, "Root Cause (first observed failure)");
  if (r.at == last) return std::nullopt;
  for (size_t i = r.at + 1; i < last && !(i > r.at + 1 && tail[i].rfind("==", 0) == 0); ++i) {
    if (auto v = summary_field(tail[i], "rank"); v && r.rank.empty()) r.rank = v->substr(0, v->find(' '));
    if (auto v = summary_field(tail[i], "exitcode"); v && r.exitcode.empty()) r.exitcode = *v;
  }
  if (r.rank.empty()) return std::nullopt;
  return r;
}

// The lines rank `rank` wrote above torchrun's summary ("[rank1]: ..."), its prefix removed.
std::vector<std::string> rank_lines(const std::vector<std::string>& tail, size_t root, const std::string& rank) {
  const std::string prefix = "[rank" + rank + "]:";
  std::vector<std::string> own;
  for (size_t i = 0; i < root; ++i)
    if (tail[i].rfind(prefix, 0) == 0) {
      std::string l = tail[i].substr(prefix.size());
      own.push_back(l.empty() || l[0] != ' ' ? l : l.substr(1));
    }
  return own;
}

std::string torchrun_root_cause(const std::vector<std::string>& tail, size_t last) {
  const auto rc = root_cause(tail, last);
  if (!rc) return "";
  const size_t root = rc->at;
  const std::string& rank = rc->rank;
  const std::string& exitcode = rc->exitcode;
  const std::vector<std::string> own = rank_lines(tail, root, rank);
  if (!own.empty()) {
    if (std::string exc = traceback_exception(own, own.size()); !exc.empty()) return "rank " + rank + ": " + exc;
  } else if (std::string first = first_exception(tail, last_starting(tail, root, kTracebackHeader)); !first.empty()) {
    // Bare lines (a failure inside init_process_group, or PyTorch 1.13): which rank wrote a
    // traceback is unknown, and torchrun's "first observed" is only the first it polled (1.13
    // named rank 0 when rank 1 raised and rank 0 then lost its peer). Above torchrun's own
    // traceback, the first exception written is the first failure; the rest follow from it.
    return first;
  }
  // No traceback (a signal, an abort in C++): the exit code, whose signal torchrun names. Spaces
  // squeezed and the pid dropped: "-6 (SIGABRT)".
  std::string code = exitcode.substr(0, exitcode.find(' '));
  if (size_t sig = exitcode.rfind("(SIG"); sig != std::string::npos) code += " " + exitcode.substr(sig);
  return code.empty() ? "rank " + rank + " failed" : "rank " + rank + ": exit code " + code;
}

// Not the user's file: generated code (<frozen runpy>, <string>), an installed package's, the
// standard library's (.../lib/python3.11/...) or the agent's.
bool user_path(const std::string& p) {
  if (p.empty() || p[0] == '<') return false;
  if (p.find("/site-packages/") != std::string::npos || p.find("/dist-packages/") != std::string::npos) return false;
  if (p.find("/trainscope_agent/") != std::string::npos) return false;
  const size_t lib = p.find("/lib/python");
  return lib == std::string::npos || !std::isdigit(static_cast<unsigned char>(p[std::min(p.size() - 1, lib + 11)]));
}

// The innermost user frame of the traceback whose header is tail[h]: its frames are the indented
// lines after it, each `File "PATH", line N, in FUNC` and then, where the source was readable,
// the line's text (and, from Python 3.11, a row of carets under it).
std::optional<FailureFrame> user_frame_of(const std::vector<std::string>& tail, size_t h) {
  std::optional<FailureFrame> found;
  bool in_user = false;
  for (size_t j = h + 1; j < tail.size() && indented(tail[j]); ++j) {
    const std::string l = trim(tail[j]);
    if (l.rfind("File \"", 0) == 0) {
      const size_t q = l.find('"', 6);
      const size_t ln = l.find(", line ", q == std::string::npos ? 0 : q);
      in_user = false;
      if (q == std::string::npos || ln == std::string::npos || !user_path(l.substr(6, q - 6))) continue;
      FailureFrame f;
      f.file = l.substr(6, q - 6);
      try {
        f.line = std::stoll(l.substr(ln + 7));
      } catch (const std::exception&) {
        continue;
      }
      if (const size_t in = l.find(", in ", ln); in != std::string::npos) f.function = l.substr(in + 5);
      found = f;
      in_user = true;
    } else if (in_user && found && found->code.empty() && l.find_first_not_of("^~ ") != std::string::npos) {
      found->code = l;
    }
  }
  return found;
}

}  // namespace

std::optional<FailureFrame> failure_frame(const std::vector<std::string>& tail) {
  // The traceback failure_line reads: the root-cause rank's own, else (bare rank lines, 1.13)
  // the first written above torchrun's, else the last.
  if (const auto rc = root_cause(tail, tail.size())) {
    const std::vector<std::string> own = rank_lines(tail, rc->at, rc->rank);
    if (!own.empty()) {
      const size_t h = last_starting(own, own.size(), kTracebackHeader);
      return h == own.size() ? std::nullopt : user_frame_of(own, h);
    }
    const size_t end = last_starting(tail, rc->at, kTracebackHeader);
    for (size_t i = 0; i < end; ++i)
      if (tail[i].rfind(kTracebackHeader, 0) == 0) return user_frame_of(tail, i);
    return std::nullopt;
  }
  const size_t h = last_starting(tail, tail.size(), kTracebackHeader);
  return h == tail.size() ? std::nullopt : user_frame_of(tail, h);
}

std::string failure_line(const std::vector<std::string>& tail, bool traceback_only) {
  size_t last = tail.size();
  while (last > 0 && blank(tail[last - 1])) --last;
  if (last == 0) return "";
  if (std::string root = torchrun_root_cause(tail, last); !root.empty()) return root;
  if (std::string exc = traceback_exception(tail, last); !exc.empty()) return exc;
  if (traceback_only) return "";
  // A traceback cut short leaves only its frames: the last line, as it came.
  return tail[last - 1];
}

std::optional<ProcessDeath> torchrun_root_death(const std::vector<std::string>& tail) {
  const auto rc = root_cause(tail, tail.size());
  if (!rc) return std::nullopt;
  // "-6 (pid: 8229)  (SIGABRT)": a negative exit code is the signal that ended the rank.
  ProcessDeath d;
  try {
    const int code = std::stoi(rc->exitcode);
    if (code >= 0) return std::nullopt;
    d.signal = -code;
    const size_t p = rc->exitcode.find("(pid:");
    if (p == std::string::npos) return std::nullopt;
    d.pid = std::stoll(rc->exitcode.substr(p + 5));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return d;
}

bool signal_from_outside(int signal) {
  return signal == SIGTERM || signal == SIGKILL || signal == SIGINT || signal == SIGHUP;
}

}  // namespace ts
