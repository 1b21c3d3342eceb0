#pragma once
// Evidence holding only a trace's analysis: a trace under tests/data (provenance: tests/data/README.md)
// read and analysed, for the rules that read traces.
#include <string>

#include "analysis/trace_analysis.h"
#include "diagnose/evidence.h"
#include "trace/reader.h"

namespace ts::test {

inline diagnose::Evidence trace_evidence(const std::string& name) {
  diagnose::Evidence ev;
  ev.trace = analysis::analyse(trace::read_trace(std::string(TS_TEST_DATA) + "/" + name));
  return ev;
}

}  // namespace ts::test
