#pragma once
// One doctor check result: a verdict, the evidence it was based on, and the fix.
// Checks are pure functions of DoctorFacts (facts.h), so each can be tested on crafted facts.
#include <string>
#include <utility>
#include <vector>

namespace ts::doctor {

enum class Status { pass, warn, fail, skip };
const char* status_name(Status s);  // "pass", "warn", "fail", "skip"

struct Check {
  std::string id;       // stable kebab-case, e.g. "thread-budget"
  std::string title;    // "Threads vs CPU budget"
  Status status = Status::skip;
  std::string summary;  // one line: what was found
  std::vector<std::pair<std::string, std::string>> evidence;  // name -> value (with unit)
  std::string fix;      // empty on pass/skip

  Check& add(std::string name, std::string value) {
    evidence.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

}  // namespace ts::doctor
