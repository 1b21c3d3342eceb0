#pragma once
// OMP_NUM_THREADS=1 for the PyTorch processes a test starts, restored after it. One intra-op
// thread makes outcomes that other work on the cores would otherwise move: a pool that sleeps
// through a long data wait (its first operator waits for it to wake), or tensors allocated from
// whichever thread's malloc arena ran first (a peak RSS that varies with the load).
#include <cstdlib>
#include <string>

namespace ts::test {

struct OneIntraOpThread {
  OneIntraOpThread() {
    if (const char* v = std::getenv("OMP_NUM_THREADS")) had = true, saved = v;
    setenv("OMP_NUM_THREADS", "1", 1);
  }
  ~OneIntraOpThread() {
    if (had) setenv("OMP_NUM_THREADS", saved.c_str(), 1);
    else unsetenv("OMP_NUM_THREADS");
  }
  OneIntraOpThread(const OneIntraOpThread&) = delete;
  OneIntraOpThread& operator=(const OneIntraOpThread&) = delete;
  std::string saved;
  bool had = false;
};

}  // namespace ts::test
