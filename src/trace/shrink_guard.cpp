#include "trace/shrink_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>

namespace ts::trace {

struct ShrinkGuardAccess {
  static char* begin(ShrinkGuard* g) { return g->begin_; }
  static char* end(ShrinkGuard* g) { return g->end_; }
  static ShrinkGuard* outer(ShrinkGuard* g) { return g->outer_; }
  static void mark(ShrinkGuard* g) { g->faulted_ = 1; }
};

namespace {

// SIGBUS is delivered to the thread that faulted, so the range it may absorb is per thread
// (multi-trace analysis reads traces on several threads). initial-exec: no lazy TLS
// allocation can happen inside the signal handler.
thread_local ShrinkGuard* t_guard __attribute__((tls_model("initial-exec"))) = nullptr;

std::mutex g_mutex;          // guards g_users and the installation
int g_users = 0;             // live guards in the process
struct sigaction g_previous;  // the handler before ours (read by the handler, written before install)

void on_sigbus(int sig, siginfo_t* info, void* context) {
  char* addr = static_cast<char*>(info->si_addr);
  ShrinkGuard* g = t_guard;
  while (g && !(addr >= ShrinkGuardAccess::begin(g) && addr < ShrinkGuardAccess::end(g))) g = ShrinkGuardAccess::outer(g);
  if (g && info->si_code == BUS_ADRERR) {
    // The page is past the file's new end, and so is everything after it: replace the rest of
    // the range by zero pages (mmap is a plain system call, safe here) and retry the access.
    uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    char* from = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(addr) & ~(page - 1));
    void* m = ::mmap(from, static_cast<size_t>(ShrinkGuardAccess::end(g) - from), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (m != MAP_FAILED) {
      ShrinkGuardAccess::mark(g);
      return;
    }
  }
  // Not ours: behave as the previous disposition would.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    // Default: die of SIGBUS as if we were not here (the access faults again on return).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGBUS, &dfl, nullptr);
  }
}

}  // namespace

ShrinkGuard::ShrinkGuard(char* begin, size_t len) : begin_(begin), end_(begin + len), outer_(t_guard) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_users++ == 0) {
      struct sigaction sa {};
      sa.sa_sigaction = on_sigbus;
      sa.sa_flags = SA_SIGINFO;
      sigemptyset(&sa.sa_mask);
      ::sigaction(SIGBUS, &sa, &g_previous);
    }
  }
  t_guard = this;
}

ShrinkGuard::~ShrinkGuard() {
  t_guard = outer_;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_users == 0) ::sigaction(SIGBUS, &g_previous, nullptr);
}

}  // namespace ts::trace
