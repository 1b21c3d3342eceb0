#pragma once
// Reading a mapped file that another process truncates meanwhile (a profiler still writing it,
// a copy in progress): touching a page past the new end raises SIGBUS, which would kill the
// process. While a ShrinkGuard lives, a SIGBUS inside its range on *this* thread maps zero
// pages over the rest of the range and returns, so the parser reads zeros (which it rejects
// like any other bad byte) and unwinds normally; the reader then reports the shrink.
// Faults outside the guarded range (or on other threads) go to the handler that was there
// before, which is put back when the last guard in the process ends.
#include <cstddef>

namespace ts::trace {

class ShrinkGuard {
 public:
  // [begin, begin + len) must be page-aligned and stay mapped while the guard lives. Guards
  // nest per thread (two traces open at once on one thread); they must end in reverse order.
  ShrinkGuard(char* begin, size_t len);
  ~ShrinkGuard();
  ShrinkGuard(const ShrinkGuard&) = delete;
  ShrinkGuard& operator=(const ShrinkGuard&) = delete;
  // True once a fault in the range was absorbed (the file shrank under the mapping).
  bool faulted() const { return faulted_ != 0; }

 private:
  friend struct ShrinkGuardAccess;
  char* begin_;
  char* end_;
  ShrinkGuard* outer_;  // the thread's previous guard
  volatile int faulted_ = 0;
};

}  // namespace ts::trace
