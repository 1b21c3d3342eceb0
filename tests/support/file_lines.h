#pragma once
// A fixture file's lines without their newlines (tests/data/stderr: a job's stderr as the run
// layer keeps its tail); empty when the file cannot be read.
#include <fstream>
#include <string>
#include <vector>

namespace ts::test {

inline std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace ts::test
