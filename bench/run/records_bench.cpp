// Long runs (issue #18): trainscope's memory and CPU while an agent sends 10 million step records.
// Feeds the records through RecordDecoder exactly as the channel's reader does (64 KiB reads, a
// GPU record after each step, two ranks interleaved) and, every million, prints the process RSS,
// the CPU seconds that million cost, the sample size, and the cost of what run_session does every
// 5 s (copy the records, summarise them). Flat columns = bounded memory and constant cost per record.
// Usage: bench_records [millions=10]. Timings only: never a test.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "run/agent_records.h"
#include "run/agent_summary.h"

using namespace ts::run;

namespace {

std::string step_record(uint32_t pid, uint32_t seq, int64_t step) {
  constexpr size_t kPayload = 28 * 8;
  std::string r(16 + kPayload, '\0');
  uint32_t magic = kRecordMagic;
  uint16_t len = static_cast<uint16_t>(r.size());
  std::memcpy(r.data(), &magic, 4);
  std::memcpy(r.data() + 4, &len, 2);
  r[6] = static_cast<char>(RecordType::Step);
  r[7] = 1;
  std::memcpy(r.data() + 8, &pid, 4);
  std::memcpy(r.data() + 12, &seq, 4);
  // step, flags, t_end, dur (5 ms +- a little), data_wait, ... rss growing slowly (a leak of 1 KiB/step).
  int64_t f[28] = {};
  f[0] = step;
  f[1] = kStepOptimizer | kStepLoss;
  f[2] = step * 5'000'000;
  f[3] = 5'000'000 + (step % 7) * 10'000;
  f[4] = 200'000;
  f[21] = 1'000'000'000 + step * 1024;
  for (int i = 18; i <= 20; ++i) f[i] = -1;
  std::memcpy(r.data() + 16, f, sizeof f);
  double loss = 1.0 / static_cast<double>(step + 1);
  std::memcpy(r.data() + 16 + 25 * 8, &loss, 8);
  return r;
}

std::string gpu_record(uint32_t pid, uint32_t seq, int64_t step) {
  std::string r(16 + 16, '\0');
  uint32_t magic = kRecordMagic;
  uint16_t len = static_cast<uint16_t>(r.size());
  std::memcpy(r.data(), &magic, 4);
  std::memcpy(r.data() + 4, &len, 2);
  r[6] = static_cast<char>(RecordType::Gpu);
  r[7] = 1;
  std::memcpy(r.data() + 8, &pid, 4);
  std::memcpy(r.data() + 12, &seq, 4);
  int64_t v[2] = {step, 4'000'000};
  std::memcpy(r.data() + 16, v, 16);
  return r;
}

double rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return -1;
}

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t millions = argc > 1 ? std::atoll(argv[1]) : 10;
  Records records;
  RecordDecoder dec(records);
  std::string buf;
  uint32_t seq[2] = {0, 0};
  std::printf("%10s %9s %14s %8s %16s\n", "records", "rss_mib", "cpu_s/million", "sampled", "snapshot+sum_ms");
  double cpu0 = cpu_s();
  for (int64_t n = 1; n <= millions * 1'000'000; ++n) {
    uint32_t rank = static_cast<uint32_t>(n % 2);  // two ranks, each its own steps
    int64_t step = (n + 1) / 2;
    buf += step_record(1000 + rank, ++seq[rank], step);
    buf += gpu_record(1000 + rank, ++seq[rank], step);
    if (buf.size() >= 65536) {
      dec.feed(buf);
      buf.clear();
    }
    if (n % 1'000'000 == 0) {
      double cpu = cpu_s();
      auto t0 = std::chrono::steady_clock::now();
      Records copy = records;  // what AgentChannel::snapshot() does
      AgentSummary s = summarise(copy);
      double sum_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%10lld %9.1f %14.3f %8zu %16.2f   (steps %lld, median %.3f ms, mem slope %.0f B/step)\n",
                  static_cast<long long>(n), rss_mib(), cpu - cpu0, records.steps.size(), sum_ms,
                  static_cast<long long>(s.evidence.steps), s.evidence.step_ms, s.evidence.mem_slope_bytes_per_step);
      std::fflush(stdout);
      cpu0 = cpu_s();
    }
  }
  return 0;
}
