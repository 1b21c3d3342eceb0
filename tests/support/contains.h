#pragma once
// Whether a command's output or a file's text holds a piece of text.
#include <string>

namespace ts::test {

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace ts::test
