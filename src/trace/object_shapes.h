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
//
// A value that is one of a few constants (an event's "ph" and "cat") joins the literals around
// it: `{\n    "ph": "X", "cat": "kernel", "name": ` is one step whose presets set ph and cat,
// so an event of a known kind is recognised by one compare instead of three compares and two
// string reads and lookups. The text is the same, so the value is the one its reader would give.
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
  static constexpr uint8_t kNoValue = 0xFE;   // field code of a literal that ends with a constant value
  static constexpr size_t kMaxLiteral = 64;   // a longer literal is not learnt (readers pad 64 bytes)
  static constexpr size_t kMaxNodes = 512;    // then learning stops: a trace of ever-new layouts
  static constexpr size_t kMaxAlternatives = 12;  // per step: each costs a compare on every miss
  static constexpr size_t kMaxPresets = 2;

  // One step of a layout: the literal before a member's value (or up to the '}': kClose).
  struct alignas(16) Node {
    char lit[kMaxLiteral];
    uint32_t mask = 0;       // the literal's bytes among the first 32
    uint32_t tail_mask = 0;  // its bytes among the next 32 (0 for most)
    uint8_t len = 0;
    uint8_t field = kClose;
    uint16_t child = kNone;    // first step after this one
    uint16_t sibling = kNone;  // the next alternative to this step
    uint8_t presets = 0;       // constant values within the literal: (field, code) each
    uint8_t preset_field[kMaxPresets] = {}, preset_code[kMaxPresets] = {};
  };

  // A step of an object parsed member by member: the literal's offsets in the text and the field.
  // A value that is a constant (code >= 0, what its reader made of it) ends at value_end.
  struct Step {
    uint32_t from, to;
    uint8_t field;
    int16_t code = -1;
    uint32_t value_end = 0;
  };

  ObjectShapes() { nodes_.emplace_back(); }

  // The step after `node` whose literal the text at `p` starts with, or kNone. A literal before
  // a value matches only where the value starts right after it (not more blanks: `"ts": ` must
  // not match the start of `"ts":  5`). Reads up to 64 bytes from `p`; the readers keep 64 zero
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
      if (literal_at(p, n) && (n.field >= kNoValue || !kBytes.ws[static_cast<unsigned char>(p[n.len])])) {
        // before: *link_before = b, b.sibling = c, c.sibling = d. Not ahead of a literal that
        // extends this one: the longer one (with constants in it) would never be tried again.
        if (link_before && !extends(nodes_[*link_before], n)) {
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

  // Adds the layout `steps` (literals in `text`) after `node`: a path ending in a kClose step
  // (or cut short where the object was skipped). Steps with constant values join the next
  // step's literal, or end the path with their value (kNoValue) when they are the last.
  void learn(uint16_t node, const char* text, const Step* steps, size_t n) {
    for (size_t i = 0; i < n;) {
      Node nd;
      const uint32_t from = steps[i].from;
      uint32_t to = steps[i].to;
      size_t j = i;  // the step whose field the node takes
      nd.field = steps[i].field;
      while (steps[j].code >= 0 && nd.presets < kMaxPresets) {
        const bool last = j + 1 == n;
        if (!last && steps[j + 1].from != steps[j].value_end) break;
        const uint32_t next_to = last ? steps[j].value_end : steps[j + 1].to;
        if (next_to - from > kMaxLiteral) break;
        nd.preset_field[nd.presets] = steps[j].field;
        nd.preset_code[nd.presets++] = static_cast<uint8_t>(steps[j].code);
        to = next_to;
        if (last) {
          nd.field = kNoValue;
          break;
        }
        nd.field = steps[++j].field;
      }
      i = j + 1;
      const size_t len = to - from;
      if (len == 0 || len > kMaxLiteral || nodes_.size() >= kMaxNodes) return;
      std::memcpy(nd.lit, text + from, len);
      nd.len = static_cast<uint8_t>(len);
      uint16_t c = find_child(node, nd);
      if (c == kNone) {
        if (alternatives(node) >= kMaxAlternatives) return;
        nd.mask = len >= 32 ? 0xFFFFFFFFu : (1u << len) - 1;
        nd.tail_mask = len <= 32 ? 0 : len >= 64 ? 0xFFFFFFFFu : (1u << (len - 32)) - 1;
        c = static_cast<uint16_t>(nodes_.size());
        // The newest layout is tried first (it is the likeliest next), unless a literal there
        // extends this one: then it goes last, behind every literal it could shadow.
        uint16_t last = kNone;  // the alternative to insert after (kNone: first)
        bool shadows = false;
        for (uint16_t k = nodes_[node].child; k != kNone; k = nodes_[k].sibling) {
          shadows |= extends(nodes_[k], nd);
          last = k;
        }
        if (!shadows) last = kNone;
        nd.sibling = last == kNone ? nodes_[node].child : kNone;
        nodes_.push_back(nd);  // (may move the nodes: no references into them across it)
        (last == kNone ? nodes_[node].child : nodes_[last].sibling) = c;
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
    uint32_t tail = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(d + 2), _mm_load_si128(l + 2)))) |
                    static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(d + 3), _mm_load_si128(l + 3))))
                        << 16;
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
  uint16_t find_child(uint16_t node, const Node& nd) const {
    for (uint16_t c = nodes_[node].child; c != kNone; c = nodes_[c].sibling)
      if (nodes_[c].len == nd.len && nodes_[c].field == nd.field && nodes_[c].presets == nd.presets &&
          std::memcmp(nodes_[c].lit, nd.lit, nd.len) == 0)
        return c;
    return kNone;
  }
  // Whether `longer`'s literal starts with all of `shorter`'s (and goes on).
  static bool extends(const Node& longer, const Node& shorter) {
    return longer.len > shorter.len && std::memcmp(longer.lit, shorter.lit, shorter.len) == 0;
  }

  std::vector<Node> nodes_;
  bool in_use_ = true;
  uint32_t objects_ = 0, misses_ = 0;
};

}  // namespace ts::trace::detail
