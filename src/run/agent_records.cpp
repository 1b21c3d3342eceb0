#include "run/agent_records.h"

#include <algorithm>
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

const StepTotals& totals_of(const Records& r, pid_t pid) {
  static const StepTotals none;
  const StepTotals* best = &none;
  for (auto it = r.step_totals.lower_bound({pid, 0}); it != r.step_totals.end() && it->first.first == pid; ++it)
    if (it->second.count > 0) best = &it->second;  // ordered by level: the last is the best marker
  return *best;
}

void RecordDecoder::add_step(const StepRecord& s) {
  int kind = static_cast<int>(step_source(s.flags));
  StepTotals& t = out_.step_totals[{s.pid, kind}];
  ++t.count;
  t.dur_ns += s.dur_ns, t.data_wait_ns += s.data_wait_ns, t.io_ns += s.io_ns, t.h2d_ns += s.h2d_ns;
  if (s.flags & kStepNonFinite) ++t.nonfinite;
  if (s.samples > 0) t.samples += s.samples, t.getitem_ns += s.getitem_ns, t.collate_ns += s.collate_ns, t.fetches += s.fetches;
  t.mem_peak = std::max(t.mem_peak, s.mem_peak);
  t.mem_reserved = std::max(t.mem_reserved, s.mem_reserved);
  t.rss = std::max(t.rss, s.rss);
  t.last_step = std::max(t.last_step, s.step);
  t.last_end_ns = std::max(t.last_end_ns, s.t_end_ns);
  const bool profiled = (s.flags & kStepProfiled) != 0;
  if (s.mem_allocated >= 0)
    add_mem(out_.mem, {s.pid, kind, s.step, s.mem_allocated, s.mem_reserved, s.mem_peak, -1, -1, -1, profiled});
  if (s.rss_read && s.rss >= 0)  // read at this step's end, not carried over
    add_mem(out_.host_mem, {s.pid, kind, s.step, -1, -1, -1, s.rss, s.heap, s.heap_free, profiled});
  bool keep = t.count <= kStepsHead || (s.flags & kStepProfiled);
  if (!keep) {
    keep = t.tail_seen % t.stride == 0;  // the tail's n-th step is kept when stride divides n
    ++t.tail_seen;
  }
  if (!keep) return;
  out_.steps.push_back(s);
  for (auto it = out_.gpu.begin(); it != out_.gpu.end(); ++it)  // its GPU time came first (rare)
    if (it->pid == s.pid && it->step == s.step) {
      out_.steps.back().gpu_ns = it->gpu_ns;
      out_.gpu.erase(it);
      break;
    }
  if (t.count <= kStepsHead || (s.flags & kStepProfiled)) return;
  if (++t.tail_kept <= kStepsSample) return;
  // Too many: keep every other tail step of this process and kind (the 1st, 3rd, ... which sit at
  // multiples of the doubled stride) and go on at that stride.
  int64_t head = 0, ordinal = 0;
  auto drop = [&](const StepRecord& x) {
    if (x.pid != s.pid || static_cast<int>(step_source(x.flags)) != kind) return false;
    if (++head <= kStepsHead || (x.flags & kStepProfiled)) return false;
    return (ordinal++ % 2) == 1;
  };
  out_.steps.erase(std::remove_if(out_.steps.begin(), out_.steps.end(), drop), out_.steps.end());
  t.stride *= 2;
  t.tail_kept = (ordinal + 1) / 2;
}

void RecordDecoder::add_mem(std::vector<MemPoint>& mem, MemPoint p) {
  mem.push_back(p);
  if (mem.size() <= kMemPoints) return;
  size_t w = 0;  // keep the 1st, 3rd, ...: still spread over the whole run
  for (size_t i = 0; i < mem.size(); i += 2) mem[w++] = mem[i];
  mem.resize(w);
}

void RecordDecoder::add_gpu(const GpuRecord& g) {
  // Its step usually arrived a moment before (the agent reads the CUDA events a step or two late):
  // look back a little from the end, never through the whole sample.
  size_t looked = 0;
  for (auto it = out_.steps.rbegin(); it != out_.steps.rend() && looked < 64; ++it, ++looked)
    if (it->pid == g.pid && it->step == g.step) {
      it->gpu_ns = g.gpu_ns;
      return;
    }
  // Its step came and was not sampled: nothing to join. Still to come: kept for it (a few at most).
  int64_t last = -1;
  for (auto it = out_.step_totals.lower_bound({g.pid, 0}); it != out_.step_totals.end() && it->first.first == g.pid; ++it)
    last = std::max(last, it->second.last_step);
  if (g.step <= last) return;
  if (out_.gpu.size() >= kMaxPendingGpu) out_.gpu.erase(out_.gpu.begin());
  out_.gpu.push_back(g);
}

void RecordDecoder::feed(std::string_view bytes, std::vector<StepRecord>* fresh_steps,
                         std::vector<TextRecord>* fresh_texts, std::vector<GpuRecord>* fresh_gpu) {
  fresh_steps_ = fresh_steps;
  fresh_texts_ = fresh_texts;
  fresh_gpu_ = fresh_gpu;
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
      if (pl.size() >= 31 * 8) s.heap = load<int64_t>(q + 8 * 30);
      if (pl.size() >= 32 * 8) s.heap_free = load<int64_t>(q + 8 * 31);
      if (pl.size() >= 33 * 8) {
        s.cpu_ns = load<int64_t>(q + 8 * 32);
        s.rss_read = s.cpu_ns >= 0;
      }
      if (fresh_steps_) fresh_steps_->push_back(s);
      add_step(s);
      break;
    }
    case RecordType::Gpu: {
      if (pl.size() < 16) return;
      GpuRecord g{pid, load<int64_t>(q), load<int64_t>(q + 8)};
      if (fresh_gpu_) fresh_gpu_->push_back(g);
      add_gpu(g);
      break;
    }
    case RecordType::Fetch: {
      if (pl.size() < 32) return;
      FetchTotals& f = out_.fetches;
      (f.workers.insert(pid).second ? f.first : f.later) +=
          FetchSums{1, load<int64_t>(q + 8), load<int64_t>(q + 16), load<int64_t>(q + 24)};
      break;
    }
    case RecordType::Text: {
      TextRecord t = parse_text(pl);
      t.pid = pid;
      if (fresh_texts_) fresh_texts_->push_back(t);
      if (out_.texts.size() < kMaxTexts) out_.texts.push_back(std::move(t));
      else ++out_.texts_dropped;
      break;
    }
    default:
      break;  // a newer agent's record type: ignore
  }
}

}  // namespace ts::run
