#pragma once
// Formatting shared by the reports: evidence values with their units, breakdown class names.
#include <string>
#include <vector>

#include "diagnose/finding.h"

namespace ts::report {

// "40.0%", "12.3 ms", "1.2 GiB", "5", "2.3x", "AdamW" ... for one evidence value.
std::string format_evidence(const diagnose::EvidenceValue& e);
// Human names of the step-time classes, in kBreakdownClasses order.
const std::vector<std::string>& breakdown_labels();
// Greedy word wrap to `width` columns (UTF-8 aware enough for our text: counts code points).
std::vector<std::string> wrap(const std::string& text, int width);
size_t display_width(const std::string& s);
std::string fit(const std::string& s, size_t width);  // truncate with "…"
// What a trace section is headed with: its file, or, for an analysis with no file name (built
// in memory), what it came from: "(the profiler window of this run)" for `trainscope run`.
std::string trace_title(const std::string& path, const std::string& command);

}  // namespace ts::report
