#pragma once
// The findings an experiment's evidence produced, as a short list (text) or a JSON array.
#include <string>
#include <vector>

#include "diagnose/finding.h"
#include "util/json_writer.h"

namespace ts::experiment {

std::string findings_text(const std::vector<diagnose::Finding>& findings);
void findings_json(JsonWriter& w, const std::vector<diagnose::Finding>& findings);

}  // namespace ts::experiment
