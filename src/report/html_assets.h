#pragma once
// The HTML report's stylesheet and chart script, inlined into every report (no network).
namespace ts::report {
extern const char* const kHtmlCss;
extern const char* const kHtmlErrorHook;  // first script in <head>: flags any JS error on <html>
extern const char* const kHtmlChartsJs;   // draws the charts from the embedded JSON report
}  // namespace ts::report
