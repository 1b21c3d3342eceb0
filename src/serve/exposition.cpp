#include "serve/exposition.h"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace ts::serve {
namespace {

bool name_char(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

const char* type_name(MetricType t) {
  switch (t) {
    case MetricType::counter: return "counter";
    case MetricType::gauge: return "gauge";
    case MetricType::histogram: return "histogram";
    case MetricType::untyped: return "untyped";
  }
  return "untyped";
}

void escape_help(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

void escape_label(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

}  // namespace

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, true)) return false;
  return true;
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, false)) return false;
  return true;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);  // shortest round-trip representation
}

void Exposition::family(std::string_view name, MetricType type, std::string_view help) {
  if (!valid_metric_name(name)) throw std::logic_error(fmt::format("invalid metric name '{}'", name));
  std::string key(name);
  if (index_.count(key)) return;
  index_[key] = families_.size();
  families_.push_back({key, std::string(help), type, {}});
}

void Exposition::sample(std::string_view family, std::string_view sample_name, const Labels& labels,
                        double value) {
  auto it = index_.find(std::string(family));
  if (it == index_.end()) throw std::logic_error(fmt::format("sample of undeclared family '{}'", family));
  if (!valid_metric_name(sample_name)) throw std::logic_error(fmt::format("invalid metric name '{}'", sample_name));
  std::string& out = families_[it->second].samples;
  out += sample_name;
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!valid_label_name(k)) throw std::logic_error(fmt::format("invalid label name '{}'", k));
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      escape_label(out, v);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_value(value);
  out += '\n';
}

void Exposition::histogram(std::string_view family, const Labels& labels,
                           const std::vector<std::pair<double, double>>& buckets, double sum, double count) {
  const std::string base(family);
  bool have_inf = false;
  for (const auto& [le, n] : buckets) {
    Labels l = labels;
    l.emplace_back("le", format_value(le));
    sample(family, base + "_bucket", l, n);
    have_inf = have_inf || std::isinf(le);
  }
  if (!have_inf) {
    Labels l = labels;
    l.emplace_back("le", "+Inf");
    sample(family, base + "_bucket", l, count);
  }
  sample(family, base + "_sum", labels, sum);
  sample(family, base + "_count", labels, count);
}

std::string Exposition::text() const {
  std::string out;
  for (const auto& f : families_) {
    if (f.samples.empty()) continue;  // a family with no sample says nothing
    out += "# HELP ";
    out += f.name;
    out += ' ';
    escape_help(out, f.help);
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    out += f.samples;
  }
  return out;
}

}  // namespace ts::serve
