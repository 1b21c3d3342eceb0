#pragma once
// The report of a job directory (`trainscope report DIR`): the merged view (job_merge.h) as text,
// JSON (schema trainscope.report/2 with a `job` section, docs/SCHEMA.md) and HTML. The text: the
// job and what is wrong with the directory, the job's step as its slowest node sets it and what
// fixing that node gives, the findings (straggler-rank by node and rank, node-mismatch), then every
// rank of every node and the nodes side by side.
#include <string>

#include "report/report.h"
#include "run/job_merge.h"

namespace ts::run {

std::string job_report_text(const JobView& v, const report::TerminalStyle& style);
std::string job_report_json(const JobView& v);
std::string job_report_html(const JobView& v);

}  // namespace ts::run
