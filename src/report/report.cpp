#include "report/report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace ts::report {

ReportInput from_evidence(const diagnose::Evidence& ev, diagnose::Diagnosis d) {
  ReportInput in;
  in.diagnosis = std::move(d);
  if (ev.trace) in.traces.push_back(*ev.trace);
  in.samples = ev.samples;
  in.agent = ev.agent;
  in.lab = ev.lab;
  in.loader = ev.loader;
  return in;
}

void write_file(const std::string& path, const std::string& content) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError(path + ": cannot write report: " + std::strerror(errno));
  size_t n = std::fwrite(content.data(), 1, content.size(), f);
  bool ok = n == content.size();
  if (std::fclose(f) != 0) ok = false;
  if (!ok) throw UserError(path + ": cannot write report: " + std::strerror(errno));
}

}  // namespace ts::report
