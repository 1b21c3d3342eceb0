// Lowers the glibc the release archive needs (trainscope-portable only; docs/ARCHITECTURE.md).
//
// The build host (Debian 12, glibc 2.36) links every call to a glibc function against that
// function's newest symbol version, and the binary then refuses to start on an older glibc
// ("version `GLIBC_2.34' not found"). The linker is told to `--wrap` each such symbol (the list is
// TS_GLIBC_FLOOR_WRAPS in CMakeLists.txt beside this file): every reference to `sym`, in our code
// and in the static libstdc++/libgcc/SQLite archives alike, becomes a reference to `__wrap_sym`,
// defined here. Each one calls the same function at an old version that every glibc >= 2.28
// still exports (`.symver` binds a local name to `sym@GLIBC_x.y`), or, where no old version
// exists, does the job with older calls. The archive's test checks that no shipped ELF file needs
// a newer GLIBC_ version than README states.
//
// Why each is safe:
// - __libc_start_main: glibc 2.34 gave it a new version because its crt1.o passes no `init`
//   function (libc runs the executable's constructors itself); an older libc would then run none.
//   We pass the constructor runner that crt1.o used to carry (`_init`, then `.init_array`), and
//   every glibc calls a non-null `init` instead of running the constructors itself.
// - pthread_*, dlopen/dlsym/dlclose/dlerror, openpty: moved from libpthread/libdl/libutil into
//   libc in 2.34 under new versions; the old versions (GLIBC_2.2.5) are the same functions. Before
//   2.34 they live in libpthread.so.0, libdl.so.2 and libutil.so.1, so the binary names all three
//   (on 2.34+ those are empty stubs) and the loader finds the versioned symbol there.
// - pthread_cond_clockwait (2.30; libstdc++'s steady-clock condition-variable waits): the real
//   one when the running glibc has it, else a CLOCK_REALTIME deadline with pthread_cond_timedwait,
//   which is what libstdc++ itself does when built for a glibc without it.
// - stat/fstat/lstat(64) (2.33): before 2.33 these were inline calls to __xstat & co, which every
//   glibc still exports; _STAT_VER 1 is x86-64's struct stat, the same layout <sys/stat.h> gives.
// - exp/log/pow (2.29): the 2.29 versions only dropped the SVID error-handling wrapper; results
//   are the same.
// - __libc_single_threaded (2.32, a variable libstdc++ reads to skip atomic reference counts):
//   always 0, "maybe multi-threaded", so the atomic path is always taken (correct, slightly slower).
// - _dl_find_object (2.35, libgcc's unwinder looks up a PC's .eh_frame_hdr): answered with
//   dl_iterate_phdr, the way libgcc did before 2.35. Only exception unwinding calls it.
// - fcntl64 (2.28, what <fcntl.h> names fcntl with 64-bit file offsets): on x86-64 off_t is
//   always 64-bit and fcntl@GLIBC_2.2.5 is the same system call with the same struct flock.
// - arc4random (2.36, libstdc++'s std::random_device): getrandom(2) (2.25), /dev/urandom if the
//   kernel lacks getrandom.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <pty.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>

#if !defined(__x86_64__) || !defined(__GLIBC__)
#error "glibc_floor.cpp pins x86-64 glibc symbol versions; build the portable archive on x86-64 Linux"
#endif

// OLD(ret, sym, version, params, args): defines __wrap_sym(params) calling sym@version(args).
#define TS_OLD(ret, sym, version, params, args)                     \
  extern "C" ret ts_old_##sym params;                               \
  __asm__(".symver ts_old_" #sym ", " #sym "@" version);            \
  extern "C" ret __wrap_##sym params { return ts_old_##sym args; }

// --- process start -------------------------------------------------------------------------
using MainFn = int (*)(int, char**, char**);
using InitFn = void (*)(int, char**, char**);
extern "C" {
// Provided by the linker and crti.o for every executable.
extern InitFn __init_array_start[] __attribute__((visibility("hidden")));
extern InitFn __init_array_end[] __attribute__((visibility("hidden")));
void _init(void);
int ts_old___libc_start_main(MainFn, int, char**, InitFn, void (*)(void), void (*)(void), void*);
}
__asm__(".symver ts_old___libc_start_main, __libc_start_main@GLIBC_2.2.5");

// What glibc < 2.34's crt1.o did in __libc_csu_init (the loader runs .preinit_array itself).
static void ts_run_constructors(int argc, char** argv, char** envp) {
  _init();
  const std::size_t n = static_cast<std::size_t>(__init_array_end - __init_array_start);
  for (std::size_t i = 0; i < n; ++i) __init_array_start[i](argc, argv, envp);
}

extern "C" int __wrap___libc_start_main(MainFn main, int argc, char** argv, InitFn init,
                                        void (*fini)(void), void (*rtld_fini)(void),
                                        void* stack_end) {
  return ts_old___libc_start_main(main, argc, argv, init ? init : ts_run_constructors, fini,
                                  rtld_fini, stack_end);
}

// --- threads (libpthread before 2.34) ------------------------------------------------------
TS_OLD(int, pthread_create, "GLIBC_2.2.5",
       (pthread_t * t, const pthread_attr_t* a, void* (*f)(void*), void* arg), (t, a, f, arg))
TS_OLD(int, pthread_detach, "GLIBC_2.2.5", (pthread_t t), (t))
TS_OLD(int, pthread_join, "GLIBC_2.2.5", (pthread_t t, void** r), (t, r))
TS_OLD(int, pthread_once, "GLIBC_2.2.5", (pthread_once_t * o, void (*f)(void)), (o, f))
TS_OLD(int, pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * k, void (*d)(void*)), (k, d))
TS_OLD(int, __pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * k, void (*d)(void*)), (k, d))
TS_OLD(int, pthread_key_delete, "GLIBC_2.2.5", (pthread_key_t k), (k))
TS_OLD(void*, pthread_getspecific, "GLIBC_2.2.5", (pthread_key_t k), (k))
TS_OLD(int, pthread_setspecific, "GLIBC_2.2.5", (pthread_key_t k, const void* v), (k, v))
TS_OLD(int, pthread_mutexattr_init, "GLIBC_2.2.5", (pthread_mutexattr_t * a), (a))
TS_OLD(int, pthread_mutexattr_destroy, "GLIBC_2.2.5", (pthread_mutexattr_t * a), (a))
TS_OLD(int, pthread_mutexattr_settype, "GLIBC_2.2.5", (pthread_mutexattr_t * a, int t), (a, t))
TS_OLD(int, pthread_mutex_trylock, "GLIBC_2.2.5", (pthread_mutex_t * m), (m))
TS_OLD(int, pthread_rwlock_rdlock, "GLIBC_2.2.5", (pthread_rwlock_t * l), (l))
TS_OLD(int, pthread_rwlock_wrlock, "GLIBC_2.2.5", (pthread_rwlock_t * l), (l))
TS_OLD(int, pthread_rwlock_unlock, "GLIBC_2.2.5", (pthread_rwlock_t * l), (l))

// --- dynamic loading (libdl before 2.34; NVML is dlopen'ed) ---------------------------------
TS_OLD(void*, dlopen, "GLIBC_2.2.5", (const char* f, int m), (f, m))
TS_OLD(void*, dlsym, "GLIBC_2.2.5", (void* h, const char* s), (h, s))
TS_OLD(int, dlclose, "GLIBC_2.2.5", (void* h), (h))
TS_OLD(char*, dlerror, "GLIBC_2.2.5", (void), ())

// --- openpty (libutil before 2.34; `run` tees the training's stderr through a pty) 
TS_OLD(int, openpty, "GLIBC_2.2.5",
       (int* leader, int* follower, char* name, const struct termios* t, const struct winsize* w),
       (leader, follower, name, t, w))

// --- pthread_cond_clockwait (2.30) ------------------------------------------------------------
using ClockwaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
static ClockwaitFn ts_find_clockwait() {
  static std::atomic<ClockwaitFn> cached{nullptr};
  static std::atomic<bool> looked{false};
  if (!looked.load(std::memory_order_acquire)) {
    // The default version of whichever glibc runs us (libpthread 2.30-2.33, libc 2.34+).
    cached.store(reinterpret_cast<ClockwaitFn>(
                     __wrap_dlsym(RTLD_DEFAULT, "pthread_cond_clockwait")),
                 std::memory_order_relaxed);
    looked.store(true, std::memory_order_release);
  }
  return cached.load(std::memory_order_relaxed);
}

// glibc < 2.30: the same remaining time as a wall-clock deadline.
static int ts_clockwait_via_realtime(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                     const struct timespec* deadline) {
  if (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) return EINVAL;
  struct timespec abs = *deadline;
  if (clock == CLOCK_MONOTONIC) {
    struct timespec now_mono, now_real;
    clock_gettime(CLOCK_MONOTONIC, &now_mono);
    clock_gettime(CLOCK_REALTIME, &now_real);
    std::int64_t left = (deadline->tv_sec - now_mono.tv_sec) * 1000000000LL +
                        (deadline->tv_nsec - now_mono.tv_nsec);
    if (left < 0) left = 0;
    std::int64_t ns = now_real.tv_nsec + left % 1000000000LL;
    abs.tv_sec = now_real.tv_sec + left / 1000000000LL + ns / 1000000000LL;
    abs.tv_nsec = ns % 1000000000LL;
  }
  return pthread_cond_timedwait(c, m, &abs);
}

extern "C" int __wrap_pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m,
                                             clockid_t clock, const struct timespec* deadline) {
  if (ClockwaitFn real = ts_find_clockwait()) return real(c, m, clock, deadline);
  return ts_clockwait_via_realtime(c, m, clock, deadline);
}

// --- stat family (2.33) -----------------------------------------------------------------------
extern "C" {
int ts_old_xstat(int, const char*, struct stat*);
int ts_old_fxstat(int, int, struct stat*);
int ts_old_lxstat(int, const char*, struct stat*);
}
__asm__(".symver ts_old_xstat, __xstat@GLIBC_2.2.5");
__asm__(".symver ts_old_fxstat, __fxstat@GLIBC_2.2.5");
__asm__(".symver ts_old_lxstat, __lxstat@GLIBC_2.2.5");
constexpr int kStatVer = 1;  // _STAT_VER_LINUX on x86-64: the kernel's struct stat
static_assert(sizeof(struct stat) == sizeof(struct stat64), "x86-64: stat and stat64 coincide");

extern "C" int __wrap_stat(const char* p, struct stat* s) { return ts_old_xstat(kStatVer, p, s); }
extern "C" int __wrap_lstat(const char* p, struct stat* s) { return ts_old_lxstat(kStatVer, p, s); }
extern "C" int __wrap_fstat(int fd, struct stat* s) { return ts_old_fxstat(kStatVer, fd, s); }
extern "C" int __wrap_stat64(const char* p, struct stat64* s) {
  return ts_old_xstat(kStatVer, p, reinterpret_cast<struct stat*>(s));
}
extern "C" int __wrap_lstat64(const char* p, struct stat64* s) {
  return ts_old_lxstat(kStatVer, p, reinterpret_cast<struct stat*>(s));
}
extern "C" int __wrap_fstat64(int fd, struct stat64* s) {
  return ts_old_fxstat(kStatVer, fd, reinterpret_cast<struct stat*>(s));
}

// --- libm (2.29) ------------------------------------------------------------------------------
TS_OLD(double, exp, "GLIBC_2.2.5", (double x), (x))
TS_OLD(double, log, "GLIBC_2.2.5", (double x), (x))
TS_OLD(double, pow, "GLIBC_2.2.5", (double x, double y), (x, y))

// --- fcntl64 (2.28) ---------------------------------------------------------------------------
extern "C" int ts_old_fcntl(int, int, ...);
__asm__(".symver ts_old_fcntl, fcntl@GLIBC_2.2.5");
extern "C" int __wrap_fcntl64(int fd, int cmd, ...) {
  // Every command's argument fits a pointer-sized slot; glibc reads it the same way.
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return ts_old_fcntl(fd, cmd, arg);
}

// --- __libc_single_threaded (2.32) ------------------------------------------------------------
extern "C" {
char __wrap___libc_single_threaded = 0;
}

// --- _dl_find_object (2.35) -------------------------------------------------------------------
namespace {
struct FindObject {
  std::uintptr_t pc;
  struct dl_find_object* out;
  bool found;
};

int ts_find_object_cb(struct dl_phdr_info* info, std::size_t, void* data) {
  auto* q = static_cast<FindObject*>(data);
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool contains = false;
  const void* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (start < lo) lo = start;
      if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
      if (q->pc >= start && q->pc < start + ph.p_memsz) contains = true;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<const void*>(start);
    }
  }
  if (!contains) return 0;
  q->out->dlfo_flags = 0;
  q->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  q->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  q->out->dlfo_link_map = nullptr;  // dl_iterate_phdr does not give it; libgcc does not read it
  q->out->dlfo_eh_frame = const_cast<void*>(eh_frame);
  q->found = true;
  return 1;
}
}  // namespace

extern "C" int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  FindObject q{reinterpret_cast<std::uintptr_t>(pc), result, false};
  dl_iterate_phdr(ts_find_object_cb, &q);
  return q.found ? 0 : -1;
}

// --- arc4random (2.36) ------------------------------------------------------------------------
extern "C" std::uint32_t __wrap_arc4random(void) {
  std::uint32_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = getrandom(p + got, sizeof v - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // ENOSYS (kernel < 3.17) or anything else: the device file below
    }
  }
  if (got < sizeof v) {
    const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && got < sizeof v) {
      const ssize_t n = read(fd, p + got, sizeof v - got);
      if (n > 0) got += static_cast<std::size_t>(n);
      else if (!(n < 0 && errno == EINTR)) break;
    }
    if (fd >= 0) close(fd);
  }
  if (got < sizeof v) abort();  // arc4random cannot fail; neither may we return predictable bits
  return v;
}
