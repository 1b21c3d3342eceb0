#pragma once
// The shapes of JSON objects a trace writes again and again, learnt while parsing.
//
// A profiler writes millions of events with a handful of layouts, byte for byte: the same keys
// in the same order with the same blanks between them (Kineto writes
// `{\n    "ph": "X", "cat": "kernel", ...`). The text between one member's value and the next
// one's (blanks, ',', the quoted key, ':') is a literal that repeats. Once an object has been
// parsed member by member, its literals and the fields their keys name go into a trie; the next
// object of that shape is parsed by comparing each literal whole (one 32-byte compare for most)
// and calling the field's value reader, instead of scanning blanks and keys byte by byte and
// looking the key up. Where no literal of the trie matches, the object goes on member by member
// from that point, so the result (values, errors) is the one the member-by-member parse gives:
// a literal matches only text that parse would read as the same keys in the same order.
#include <cstdint>
#include <cstring>
#include <vector>

#include "trace/json_scan.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ts::trace::detail {

class ObjectShapes {
 public:
  static constexpr uint16_t kNone = 0xFFFF;
  static constexpr uint16_t kRoot = 0;        // before the object's '{'
  static constexpr uint8_t kClose = 0xFF;     // field code of a literal that ends with the '}'
  static constexpr size_t kMaxLiteral = 48;   // a longer literal is not learnt (readers pad 64 bytes)
  static constexpr size_t kMaxNodes = 512;    // then learning stops: a trace of ever-new layouts
  static constexpr size_t kMaxAlternatives = 8;  // per step: each costs a compare on every miss

  // One step of a layout: the literal before a member's value (or up to the '}': kClose).
  struct alignas(16) Node {
    char lit[kMaxLiteral];
    uint32_t mask = 0;       // the literal's bytes among the first 32
    uint16_t tail_mask = 0;  // its bytes among the next 16 (0 for most)
    uint8_t len = 0;
    uint8_t field = kClose;
    uint16_t child = kNone;    // first step after this one
    uint16_t sibling = kNone;  // the next alternative to this step
  };

  // A step of an object parsed member by member: the literal's offsets in the text and the field.
  struct Step {
    uint32_t from, to;
    uint8_t field;
  };

  ObjectShapes() { nodes_.emplace_back(); }

  // The step after `node` whose literal the text at `p` starts with, or kNone. A literal before
  // a value matches only where the value starts right after it (not more blanks: `"ts": ` must
  // not match the start of `"ts":  5`). Reads up to 48 bytes from `p`; the readers keep 64 zero
  // bytes after their data, and a literal's last byte is never zero, so a literal never matches
  // past the data's end.
  // A match that is not the first alternative moves one place ahead of the one before it, so
  // the alternatives drift into the order of how often they occur (a trace interleaves its
  // layouts: moving the last match to the front would reorder them at every switch).
  uint16_t match(uint16_t node, const char* p) {
    uint16_t* link = &nodes_[node].child;  // the link to `c`
    uint16_t* link_before = nullptr;       // the link to the alternative before `c`
    for (uint16_t c = *link; c != kNone; c = *link) {
      const Node& n = nodes_[c];
      if (literal_at(p, n) && (n.field == kClose || !kBytes.ws[static_cast<unsigned char>(p[n.len])])) {
        if (link_before) {  // before: *link_before = b, b.sibling = c, c.sibling = d
          const uint16_t b = *link_before;
          nodes_[b].sibling = nodes_[c].sibling;
          nodes_[c].sibling = b;
          *link_before = c;
        }
        return c;
      }
      link_before = link;
      link = &nodes_[c].sibling;
    }
    return kNone;
  }
  const Node& node(uint16_t i) const { return nodes_[i]; }

  // Whether reading by layouts pays here. Every 4096 objects, if more than half of them had to
  // be read member by member somewhere (ever-new layouts: keys that carry a counter, args that
  // differ event by event), the layouts are given up: each such object would pay for the
  // compares that failed and the noting of a layout that does not come back (measured 2.5x
  // slower on a trace of unique args) for nothing.
  bool in_use() const { return in_use_; }
  void tally(bool by_members) {
    misses_ += by_members;
    if (++objects_ < 4096) return;
    if (misses_ * 2 > objects_) in_use_ = false;
    objects_ = misses_ = 0;
  }

  // Adds the layout `steps` (literals in `text`) after `node`: a path ending in a kClose step.
  void learn(uint16_t node, const char* text, const Step* steps, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const Step& s = steps[i];
      const size_t len = s.to - s.from;
      if (len == 0 || len > kMaxLiteral || nodes_.size() >= kMaxNodes) return;
      uint16_t c = find_child(node, text + s.from, len, s.field);
      if (c == kNone) {
        if (alternatives(node) >= kMaxAlternatives) return;
        Node nd;
        std::memcpy(nd.lit, text + s.from, len);
        nd.len = static_cast<uint8_t>(len);
        nd.field = s.field;
        nd.mask = len >= 32 ? 0xFFFFFFFFu : (1u << len) - 1;
        nd.tail_mask = static_cast<uint16_t>(len <= 32 ? 0 : (1u << (len - 32)) - 1);
        nd.sibling = nodes_[node].child;  // the newest layout is tried first: it is the likeliest next
        c = static_cast<uint16_t>(nodes_.size());
        nodes_.push_back(nd);
        nodes_[node].child = c;
      }
      node = c;
    }
  }

 private:
  // The first 32 bytes in one step, without a loop: a loop's exit, taken after one block for
  // some literals and two for others, would be mispredicted about once per member.
  static bool literal_at(const char* p, const Node& n) {
#if defined(__SSE2__)
    const __m128i* d = reinterpret_cast<const __m128i*>(p);
    const __m128i* l = reinterpret_cast<const __m128i*>(n.lit);
    uint32_t eq = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(d), _mm_load_si128(l)))) |
                  static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(d + 1), _mm_load_si128(l + 1))))
                      << 16;
    if ((eq & n.mask) != n.mask) return false;
    if (n.tail_mask == 0) [[likely]] return true;
    uint32_t tail = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(d + 2), _mm_load_si128(l + 2))));
    return (tail & n.tail_mask) == n.tail_mask;
#else
    return std::memcmp(p, n.lit, n.len) == 0;
#endif
  }
  size_t alternatives(uint16_t node) const {
    size_t k = 0;
    for (uint16_t c = nodes_[node].child; c != kNone; c = nodes_[c].sibling) ++k;
    return k;
  }
  uint16_t find_child(uint16_t node, const char* lit, size_t len, uint8_t field) const {
    for (uint16_t c = nodes_[node].child; c != kNone; c = nodes_[c].sibling)
      if (nodes_[c].len == len && nodes_[c].field == field && std::memcmp(nodes_[c].lit, lit, len) == 0) return c;
    return kNone;
  }

  std::vector<Node> nodes_;
  bool in_use_ = true;
  uint32_t objects_ = 0, misses_ = 0;
};

}  // namespace ts::trace::detail
