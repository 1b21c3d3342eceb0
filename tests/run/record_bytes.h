#pragma once
// Agent records built byte by byte the way agent/trainscope_agent/channel.py packs them: the
// 16-byte header (magic, length, type, version, pid, sequence) and a TEXT record.
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

// TEXT: "key=value" lines (kind=hello, kind=loader, ...).
inline std::string text_rec(uint32_t pid, uint32_t seq, const std::string& body) {
  return header(1, body.size(), pid, seq) + body;
}

}  // namespace ts::run::test
