#pragma once
// Prometheus text exposition format 0.0.4 (Content-Type: text/plain; version=0.0.4):
//   # HELP name text        (backslash and newline escaped)
//   # TYPE name counter|gauge|histogram|summary|untyped
//   name{label="value",...} number
// Names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*; label values escape
// backslash, double quote and newline; numbers are Go-style floats (NaN, +Inf, -Inf).
// A family's samples must follow its HELP/TYPE lines without another family in between, so
// the writer collects samples per family and prints them in order of first declaration.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ts::serve {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { counter, gauge, histogram, untyped };

bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);
std::string format_value(double v);  // 1, 0.25, 1e+21, NaN, +Inf

class Exposition {
 public:
  // Declares a family (once; later calls with the same name are ignored).
  // Throws std::logic_error on an invalid name: that is a programming error, not input.
  void family(std::string_view name, MetricType type, std::string_view help);
  // A sample of a declared family. For histograms pass the full sample name
  // (name_bucket with an "le" label, name_sum, name_count) and the family name.
  void sample(std::string_view family, std::string_view sample_name, const Labels& labels, double value);
  void sample(std::string_view family, const Labels& labels, double value) {
    sample(family, family, labels, value);
  }
  // A histogram from cumulative buckets (upper bound, count <= bound), sum and count.
  void histogram(std::string_view family, const Labels& labels,
                 const std::vector<std::pair<double, double>>& buckets, double sum, double count);

  bool has_family(std::string_view name) const { return index_.count(std::string(name)) > 0; }
  std::string text() const;

 private:
  struct Family {
    std::string name, help;
    MetricType type;
    std::string samples;
  };
  std::vector<Family> families_;
  std::map<std::string, size_t> index_;
};

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace ts::serve
