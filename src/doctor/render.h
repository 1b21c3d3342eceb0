#pragma once
// The doctor checklist's formats: text for a terminal and JSON (schema trainscope.doctor/1,
// docs/DOCTOR.md). Presentation only: the facts and the checks' verdicts come in finished.
#include <string>
#include <vector>

#include "doctor/check.h"
#include "doctor/facts.h"

namespace ts::doctor {

struct Counts {
  int pass = 0, warn = 0, fail = 0, skip = 0;
};
Counts count(const std::vector<Check>& checks);

std::string render_text(const DoctorFacts& f, const std::vector<Check>& checks, bool color, bool verbose);
std::string render_json(const DoctorFacts& f, const std::vector<Check>& checks);

}  // namespace ts::doctor
