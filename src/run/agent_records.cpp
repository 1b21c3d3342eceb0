#include "run/agent_records.h"

#include <charconv>
#include <cstring>

namespace ts::run {
namespace {

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // the agent writes little-endian, as does every host we run on
  return v;
}

}  // namespace

StepSource step_source(int64_t flags) {
  if (flags & kStepOptimizer) return StepSource::Optimizer;
  if (flags & kStepBackward) return StepSource::Backward;
  if (flags & kStepForward) return StepSource::Forward;
  return StepSource::Fetch;
}

const char* step_source_name(StepSource s) {
  switch (s) {
    case StepSource::Optimizer: return "optimizer";
    case StepSource::Backward: return "backward";
    case StepSource::Forward: return "forward";
    case StepSource::Fetch: break;
  }
  return "dataloader";
}

std::string TextRecord::get(const std::string& k, const std::string& dflt) const {
  auto it = kv.find(k);
  return it == kv.end() ? dflt : it->second;
}

int64_t TextRecord::get_int(const std::string& k, int64_t dflt) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return dflt;
  int64_t v = dflt;
  const auto& s = it->second;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc()) {
    // "True"/"False" from Python bools that slipped through, or floats.
    if (s == "True") return 1;
    if (s == "False") return 0;
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    return end != s.c_str() ? static_cast<int64_t>(d) : dflt;
  }
  return v;
}

double TextRecord::get_double(const std::string& k, double dflt) const {
  auto it = kv.find(k);
  if (it == kv.end() || it->second.empty()) return dflt;
  char* end = nullptr;
  double d = std::strtod(it->second.c_str(), &end);
  return end != it->second.c_str() ? d : dflt;
}

TextRecord parse_text(std::string_view payload) {
  TextRecord t;
  size_t pos = 0;
  bool first = true;
  while (pos <= payload.size()) {
    size_t nl = payload.find('\n', pos);
    if (nl == std::string_view::npos) nl = payload.size();
    std::string_view line = payload.substr(pos, nl - pos);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos) {
      std::string k(line.substr(0, eq)), v(line.substr(eq + 1));
      if (first && k == "kind")
        t.kind = v;
      else
        t.kv[k] = v;
    }
    first = false;
    pos = nl + 1;
  }
  return t;
}

void RecordDecoder::feed(std::string_view bytes) {
  out_.bytes += bytes.size();
  buf_.append(bytes);
  size_t pos = 0;
  while (buf_.size() - pos >= kRecordHeader) {
    const char* p = buf_.data() + pos;
    uint32_t magic = load<uint32_t>(p);
    uint16_t len = load<uint16_t>(p + 4);
    if (magic != kRecordMagic || len < kRecordHeader || len > kMaxRecord) {
      // Not a record boundary: skip a byte and look for the next magic.
      ++pos;
      ++out_.bad_bytes;
      continue;
    }
    if (buf_.size() - pos < len) break;
    decode_one(std::string_view(p, len));
    pos += len;
  }
  buf_.erase(0, pos);
}

void RecordDecoder::decode_one(std::string_view rec) {
  const char* p = rec.data();
  auto type = static_cast<RecordType>(static_cast<uint8_t>(p[6]));
  pid_t pid = static_cast<pid_t>(load<uint32_t>(p + 8));
  uint32_t seq = load<uint32_t>(p + 12);
  auto& last = out_.last_seq[pid];
  if (seq > last + 1) out_.seq_gaps += seq - last - 1;
  if (seq > last || seq == 1) last = seq;  // seq restarts at 1 in a forked child reusing a pid
  std::string_view pl = rec.substr(kRecordHeader);
  const char* q = pl.data();
  switch (type) {
    case RecordType::Step: {
      if (pl.size() < 26 * 8) return;
      StepRecord s;
      s.pid = pid;
      int64_t* f[] = {&s.step, &s.flags, &s.t_end_ns, &s.dur_ns, &s.data_wait_ns, &s.fetches,
                      &s.h2d_ns, &s.h2d_count, &s.h2d_bytes, &s.h2d_pageable, &s.h2d_blocking,
                      &s.fwd_ns, &s.bwd_ns, &s.opt_ns, &s.io_ns, &s.io_count, &s.item_count,
                      &s.item_ns, &s.mem_allocated, &s.mem_reserved, &s.mem_peak, &s.rss,
                      &s.samples, &s.getitem_ns, &s.collate_ns};
      for (size_t i = 0; i < std::size(f); ++i) *f[i] = load<int64_t>(q + 8 * i);
      s.loss = load<double>(q + 8 * 25);
      if (pl.size() >= 28 * 8) {
        s.comm_ns = load<int64_t>(q + 8 * 26);
        s.comm_count = load<int64_t>(q + 8 * 27);
      }
      if (pl.size() >= 30 * 8) {
        s.bwd_count = load<int64_t>(q + 8 * 28);
        s.opt_count = load<int64_t>(q + 8 * 29);
      }
      out_.steps.push_back(s);
      break;
    }
    case RecordType::Gpu: {
      if (pl.size() < 16) return;
      out_.gpu.push_back({pid, load<int64_t>(q), load<int64_t>(q + 8)});
      break;
    }
    case RecordType::Fetch: {
      if (pl.size() < 32) return;
      FetchRecord f;
      f.pid = pid;
      f.worker_id = load<int32_t>(q);
      f.samples = load<int64_t>(q + 8);
      f.getitem_ns = load<int64_t>(q + 16);
      f.collate_ns = load<int64_t>(q + 24);
      out_.fetches.push_back(f);
      break;
    }
    case RecordType::Text: {
      TextRecord t = parse_text(pl);
      t.pid = pid;
      out_.texts.push_back(std::move(t));
      break;
    }
    default:
      break;  // a newer agent's record type: ignore
  }
}

}  // namespace ts::run
