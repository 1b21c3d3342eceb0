#pragma once
// Agent records built byte by byte the way agent/trainscope_agent/channel.py packs them: the
// 16-byte header (magic, length, type, version, pid, sequence), a STEP and a TEXT record.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "run/agent_records.h"

namespace ts::run::test {

inline std::string header(uint8_t type, size_t payload, uint32_t pid, uint32_t seq) {
  std::string h(16, '\0');
  uint32_t magic = kRecordMagic;
  uint16_t len = static_cast<uint16_t>(16 + payload);
  std::memcpy(h.data(), &magic, 4);
  std::memcpy(h.data() + 4, &len, 2);
  h[6] = static_cast<char>(type);
  h[7] = 1;
  std::memcpy(h.data() + 8, &pid, 4);
  std::memcpy(h.data() + 12, &seq, 4);
  return h;
}

// STEP as channel.py packs it (`<25qdqqqqqqq`): fields 0-24 and 26-32 are int64, 25 is the loss (a
// double, whatever f[25] holds); the first `n` fields are sent (26, 32: an older agent's record).
template <size_t N>
std::string step_record(uint32_t pid, uint32_t seq, const std::array<int64_t, N>& f, double loss = 0.5,
                        size_t n = N) {
  std::string p(n * 8, '\0');
  std::memcpy(p.data(), f.data(), n * 8);
  std::memcpy(p.data() + 25 * 8, &loss, 8);
  return header(2, p.size(), pid, seq) + p;
}

// TEXT: "key=value" lines (kind=hello, kind=loader, ...).
inline std::string text_rec(uint32_t pid, uint32_t seq, const std::string& body) {
  return header(1, body.size(), pid, seq) + body;
}

}  // namespace ts::run::test
