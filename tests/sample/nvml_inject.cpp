// NVML injection library: a STAND-IN FOR THE NVIDIA DRIVER, used by the tests and the
// benchmark on machines without a GPU (the approach DCGM itself uses to test its NVML path).
// It exports the NVML C symbols that trainscope binds and answers them with scripted values
// read at nvmlInit from the file named by $NVML_INJECT_SCRIPT:
//
//   gpus 2                      # device count
//   driver 550.54.15
//   init_error 9                # nvmlInit fails with this code
//   gpu 0 name NVIDIA H100 80GB HBM3
//   all util 100 0 0            # every GPU; numbers after a key are a sequence, one per call
//   gpu 1 lost_after 3          # after 3 utilisation reads, every call answers GPU_IS_LOST
//   gpu 0 unsupported temp power   # these calls answer NOT_SUPPORTED
//   gpu 0 procs 100:1048576 200:2048     # pid:bytes
//   gpu 0 procs_race 5          # 5 processes appear between the sizing call and the next
//   gpu 0 gpm 1                 # GPM supported; gpm_sm/gpm_tensor/gpm_occ/gpm_dram sequences
//   gpu 0 sample_period_us 10000  # nvmlDeviceGetSamples: driver samples this far apart
//   gpu 0 samples_per_call 5       #   and this many new ones per call (values: driver_util)
//
// Built twice: the full library (newest versioned symbols, GPM, buffered samples) and, with
// INJECT_LEGACY, an old driver's (unversioned symbols only, no GPM, no samples, no energy,
// the old "Throttle" reasons name, 16-byte process entries). nvmlInjectCalls(name) counts
// calls per symbol so a test can see which version was bound.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalid = 2, kNotSupported = 3, kNotFound = 6, kInsufficient = 7,
              kUninit = 1, kLost = 15, kVersion = 25;

struct Gpu {
  int index = 0;
  std::string name = "Injected GPU", uuid, pci;
  std::map<std::string, std::vector<double>> seq;
  std::map<std::string, size_t> pos;
  std::set<std::string> unsupported;
  int lost_after = -1, util_reads = 0;
  std::vector<std::pair<unsigned, unsigned long long>> procs;
  int procs_race = 0;
  bool gpm = false;
  unsigned long long sample_period_us = 0, driver_clock_us = 1000000;
  unsigned samples_per_call = 0;
  int gpm_gets = 0;

  double next(const std::string& k, double dflt) {
    auto it = seq.find(k);
    if (it == seq.end() || it->second.empty()) return dflt;
    size_t& p = pos[k];
    return it->second[p++ % it->second.size()];
  }
  double peek(const std::string& k, double dflt) {
    auto it = seq.find(k);
    if (it == seq.end() || it->second.empty()) return dflt;
    return it->second[pos[k] % it->second.size()];
  }
  bool lost() const { return lost_after >= 0 && util_reads >= lost_after; }
};

std::mutex mu;
bool inited = false;
int init_error = 0;
std::string driver = "550.54.15";
std::vector<Gpu> gpus;
std::map<std::string, int> calls;

void load_script() {
  gpus.clear();
  init_error = 0;
  driver = "550.54.15";
  const char* path = std::getenv("NVML_INJECT_SCRIPT");
  std::vector<std::string> lines;
  if (path) {
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) lines.push_back(l);
  }
  auto ensure = [](size_t n) {
    while (gpus.size() < n) {
      Gpu g;
      g.index = static_cast<int>(gpus.size());
      char buf[64];
      std::snprintf(buf, sizeof buf, "GPU-00000000-0000-0000-0000-%012d", g.index);
      g.uuid = buf;
      std::snprintf(buf, sizeof buf, "00000000:%02X:00.0", 0x17 + g.index);
      g.pci = buf;
      gpus.push_back(g);
    }
  };
  for (auto& l : lines) {
    if (auto h = l.find('#'); h != std::string::npos) l.resize(h);
    std::istringstream in(l);
    std::string w;
    if (!(in >> w)) continue;
    if (w == "gpus") {
      size_t n;
      in >> n;
      ensure(n);
    } else if (w == "driver") {
      in >> driver;
    } else if (w == "init_error") {
      in >> init_error;
    } else if (w == "gpu" || w == "all") {
      size_t lo = 0, hi = gpus.size();
      if (w == "gpu") {
        in >> lo;
        ensure(lo + 1);
        hi = lo + 1;
      }
      std::string key;
      in >> key;
      std::string rest;
      std::getline(in, rest);
      for (size_t i = lo; i < hi; ++i) {
        Gpu& g = gpus[i];
        std::istringstream r(rest);
        if (key == "name") {
          g.name = rest.substr(rest.find_first_not_of(' '));
        } else if (key == "uuid") {
          r >> g.uuid;
        } else if (key == "pci") {
          r >> g.pci;
        } else if (key == "lost_after") {
          r >> g.lost_after;
        } else if (key == "procs_race") {
          r >> g.procs_race;
        } else if (key == "gpm") {
          int v;
          r >> v;
          g.gpm = v != 0;
        } else if (key == "sample_period_us") {
          r >> g.sample_period_us;
        } else if (key == "samples_per_call") {
          r >> g.samples_per_call;
        } else if (key == "unsupported") {
          for (std::string u; r >> u;) g.unsupported.insert(u);
        } else if (key == "procs") {
          g.procs.clear();
          for (std::string p; r >> p;) {
            auto c = p.find(':');
            g.procs.emplace_back(std::stoul(p.substr(0, c)), std::stoull(p.substr(c + 1)));
          }
        } else {
          std::vector<double> v;
          for (std::string t; r >> t;) v.push_back(std::strtod(t.c_str(), nullptr));
          g.seq[key] = v;
        }
      }
    }
  }
}

// Common checks for a device call: counted, initialised, valid handle, lost, supported.
int enter(const char* sym, void* dev, Gpu*& g, const char* feature) {
  ++calls[sym];
  if (!inited) return kUninit;
  g = static_cast<Gpu*>(dev);
  bool valid = false;
  for (auto& x : gpus) valid |= &x == g;
  if (!valid) return kInvalid;
  if (g->lost()) return kLost;
  if (feature && g->unsupported.count(feature)) return kNotSupported;
  return kSuccess;
}

#define DEV_CALL(sym, feature)            \
  std::lock_guard lk(mu);                 \
  Gpu* g = nullptr;                       \
  if (int r_ = enter(sym, dev, g, feature)) return r_;

struct Util { unsigned gpu, memory; };
struct Mem1 { unsigned long long total, free, used; };
struct Mem2 { unsigned version; unsigned long long total, reserved, free, used; };
struct Pci { char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; };
struct Proc1 { unsigned pid; unsigned long long used; };
struct Proc3 { unsigned pid; unsigned long long used; unsigned gi, ci; };
struct Sample { unsigned long long ts; union { double d; unsigned ui; unsigned long long ull; } v; };
struct GpmSupport { unsigned version, supported; };
struct GpmSample { Gpu* gpu; int seq; };
struct GpmMetric { unsigned id; int ret; double value; struct { char *s, *l, *u; } info; };
struct GpmGet { unsigned version, numMetrics; GpmSample *s1, *s2; GpmMetric metrics[333]; };

int init_impl(const char* sym) {
  std::lock_guard lk(mu);
  ++calls[sym];
  load_script();
  if (init_error) return init_error;
  inited = true;
  return kSuccess;
}

int count_impl(const char* sym, unsigned* n) {
  std::lock_guard lk(mu);
  ++calls[sym];
  if (!inited) return kUninit;
  *n = static_cast<unsigned>(gpus.size());
  return kSuccess;
}

int handle_impl(const char* sym, unsigned i, void** dev) {
  std::lock_guard lk(mu);
  ++calls[sym];
  if (!inited) return kUninit;
  if (i >= gpus.size()) return kInvalid;
  *dev = &gpus[i];
  return kSuccess;
}

template <class E>
int procs_impl(const char* sym, void* dev, unsigned* count, E* out) {
  DEV_CALL(sym, "procs");
  unsigned n = static_cast<unsigned>(g->procs.size());
  if (*count < n || !out) {
    *count = n;
    return n ? kInsufficient : kSuccess;
  }
  if (g->procs_race > 0) {  // new processes started since the caller sized its buffer
    for (int i = 0; i < g->procs_race; ++i) g->procs.emplace_back(9000 + i, 4096);
    g->procs_race = 0;
    *count = static_cast<unsigned>(g->procs.size());
    if (*count > n) return kInsufficient;
  }
  for (unsigned i = 0; i < g->procs.size(); ++i) {
    std::memset(&out[i], 0, sizeof(E));
    out[i].pid = g->procs[i].first;
    out[i].used = g->procs[i].second;
  }
  *count = static_cast<unsigned>(g->procs.size());
  return kSuccess;
}

int reasons_impl(const char* sym, void* dev, unsigned long long* r) {
  DEV_CALL(sym, "reasons");
  *r = static_cast<unsigned long long>(g->next("reasons", 0));
  return kSuccess;
}

}  // namespace

extern "C" {

int nvmlInjectCalls(const char* sym) {
  std::lock_guard lk(mu);
  auto it = calls.find(sym);
  return it == calls.end() ? 0 : it->second;
}
void nvmlInjectResetCalls() {
  std::lock_guard lk(mu);
  calls.clear();
}

int nvmlInit() { return init_impl("nvmlInit"); }
int nvmlShutdown() {
  std::lock_guard lk(mu);
  ++calls["nvmlShutdown"];
  inited = false;
  return kSuccess;
}
const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninit: return "Uninitialized";
    case kNotSupported: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case kLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  std::lock_guard lk(mu);
  ++calls["nvmlSystemGetDriverVersion"];
  std::snprintf(buf, len, "%s", driver.c_str());
  return kSuccess;
}
int nvmlDeviceGetCount(unsigned* n) { return count_impl("nvmlDeviceGetCount", n); }
int nvmlDeviceGetHandleByIndex(unsigned i, void** d) { return handle_impl("nvmlDeviceGetHandleByIndex", i, d); }
int nvmlDeviceGetName(void* dev, char* buf, unsigned len) {
  DEV_CALL("nvmlDeviceGetName", nullptr);
  std::snprintf(buf, len, "%s", g->name.c_str());
  return kSuccess;
}
int nvmlDeviceGetUUID(void* dev, char* buf, unsigned len) {
  DEV_CALL("nvmlDeviceGetUUID", nullptr);
  std::snprintf(buf, len, "%s", g->uuid.c_str());
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* dev, Util* u) {
  DEV_CALL("nvmlDeviceGetUtilizationRates", "util");
  ++g->util_reads;
  u->gpu = static_cast<unsigned>(g->next("util", 0));
  u->memory = static_cast<unsigned>(g->next("mem_util", 0));
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* dev, Mem1* m) {
  DEV_CALL("nvmlDeviceGetMemoryInfo", "memory");
  m->total = static_cast<unsigned long long>(g->peek("mem_total", 85899345920.0));
  m->used = static_cast<unsigned long long>(g->next("mem_used", 1073741824.0));
  m->free = m->total - m->used;
  return kSuccess;
}
int nvmlDeviceGetTemperature(void* dev, unsigned sensor, unsigned* t) {
  DEV_CALL("nvmlDeviceGetTemperature", "temp");
  if (sensor != 0) return kInvalid;
  *t = static_cast<unsigned>(g->next("temp", 40));
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  DEV_CALL("nvmlDeviceGetPowerUsage", "power");
  *mw = static_cast<unsigned>(g->next("power_mw", 70000));
  return kSuccess;
}
int nvmlDeviceGetEnforcedPowerLimit(void* dev, unsigned* mw) {
  DEV_CALL("nvmlDeviceGetEnforcedPowerLimit", "power");
  *mw = static_cast<unsigned>(g->peek("power_limit_mw", 700000));
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void* dev, unsigned type, unsigned* mhz) {
  DEV_CALL("nvmlDeviceGetClockInfo", "clocks");
  *mhz = static_cast<unsigned>(type == 2 ? g->next("mem_clock", 2619) : g->next("sm_clock", 1980));
  return kSuccess;
}
int nvmlDeviceGetMaxClockInfo(void* dev, unsigned type, unsigned* mhz) {
  DEV_CALL("nvmlDeviceGetMaxClockInfo", "clocks");
  *mhz = static_cast<unsigned>(type == 2 ? g->peek("mem_clock_max", 2619) : g->peek("sm_clock_max", 1980));
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void* dev, unsigned long long* r) {
  return reasons_impl("nvmlDeviceGetCurrentClocksThrottleReasons", dev, r);
}
int nvmlDeviceGetPcieThroughput(void* dev, unsigned counter, unsigned* kbs) {
  DEV_CALL("nvmlDeviceGetPcieThroughput", "pcie");
  *kbs = static_cast<unsigned>(g->next(counter == 0 ? "pcie_tx_kbs" : "pcie_rx_kbs", 1000));
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkGeneration(void* dev, unsigned* v) {
  DEV_CALL("nvmlDeviceGetCurrPcieLinkGeneration", "pcie");
  *v = static_cast<unsigned>(g->next("pcie_gen", 5));
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkWidth(void* dev, unsigned* v) {
  DEV_CALL("nvmlDeviceGetCurrPcieLinkWidth", "pcie");
  *v = static_cast<unsigned>(g->next("pcie_width", 16));
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void* dev, unsigned* v) {
  DEV_CALL("nvmlDeviceGetMaxPcieLinkGeneration", "pcie");
  *v = static_cast<unsigned>(g->peek("pcie_gen_max", 5));
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(void* dev, unsigned* v) {
  DEV_CALL("nvmlDeviceGetMaxPcieLinkWidth", "pcie");
  *v = static_cast<unsigned>(g->peek("pcie_width_max", 16));
  return kSuccess;
}

#ifdef INJECT_LEGACY
int nvmlDeviceGetPciInfo(void* dev, Pci* p) {
  DEV_CALL("nvmlDeviceGetPciInfo", nullptr);
  // The v1 struct had busId[16] first: write only there.
  // ... in the legacy form with a 4-digit domain ("0000:17:00.0").
  std::string legacy = g->pci.size() > 12 ? g->pci.substr(g->pci.size() - 12) : g->pci;
  std::snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%s", legacy.c_str());
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses(void* dev, unsigned* count, Proc1* out) {
  return procs_impl("nvmlDeviceGetComputeRunningProcesses", dev, count, out);
}
#else
int nvmlInit_v2() { return init_impl("nvmlInit_v2"); }
int nvmlDeviceGetCount_v2(unsigned* n) { return count_impl("nvmlDeviceGetCount_v2", n); }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  return handle_impl("nvmlDeviceGetHandleByIndex_v2", i, d);
}
int nvmlDeviceGetPciInfo_v3(void* dev, Pci* p) {
  DEV_CALL("nvmlDeviceGetPciInfo_v3", nullptr);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->busId, sizeof p->busId, "%s", g->pci.c_str());
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo_v2(void* dev, Mem2* m) {
  DEV_CALL("nvmlDeviceGetMemoryInfo_v2", "memory");
  if (m->version != (sizeof(Mem2) | (2u << 24))) return kVersion;
  m->total = static_cast<unsigned long long>(g->peek("mem_total", 85899345920.0));
  m->reserved = 512ull << 20;
  m->used = static_cast<unsigned long long>(g->next("mem_used", 1073741824.0));
  m->free = m->total - m->used - m->reserved;
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(void* dev, unsigned long long* mj) {
  DEV_CALL("nvmlDeviceGetTotalEnergyConsumption", "energy");
  *mj = static_cast<unsigned long long>(g->next("energy_mj", 123456789));
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* dev, unsigned long long* r) {
  return reasons_impl("nvmlDeviceGetCurrentClocksEventReasons", dev, r);
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* dev, unsigned* count, Proc3* out) {
  return procs_impl("nvmlDeviceGetComputeRunningProcesses_v3", dev, count, out);
}
int nvmlDeviceGetComputeRunningProcesses(void* dev, unsigned* count, Proc1* out) {
  return procs_impl("nvmlDeviceGetComputeRunningProcesses", dev, count, out);
}
int nvmlDeviceGetSamples(void* dev, unsigned type, unsigned long long last, int* vtype,
                         unsigned* count, Sample* out) {
  DEV_CALL("nvmlDeviceGetSamples", "samples");
  if (type != 1 || g->samples_per_call == 0 || g->sample_period_us == 0) return kNotFound;
  *vtype = 1;  // unsigned int
  if (!out) {
    *count = g->samples_per_call;
    return kSuccess;
  }
  unsigned n = *count < g->samples_per_call ? *count : g->samples_per_call;
  for (unsigned i = 0; i < n; ++i) {
    g->driver_clock_us += g->sample_period_us;
    out[i].ts = g->driver_clock_us;
    out[i].v.ull = 0;
    out[i].v.ui = static_cast<unsigned>(g->next("driver_util", 0));
  }
  *count = n;
  (void)last;
  return kSuccess;
}
int nvmlGpmQueryDeviceSupport(void* dev, GpmSupport* s) {
  DEV_CALL("nvmlGpmQueryDeviceSupport", nullptr);
  if (s->version != 1) return kVersion;
  s->supported = g->gpm ? 1 : 0;
  return kSuccess;
}
int nvmlGpmSampleAlloc(GpmSample** s) {
  std::lock_guard lk(mu);
  ++calls["nvmlGpmSampleAlloc"];
  *s = new GpmSample{nullptr, -1};
  return kSuccess;
}
int nvmlGpmSampleFree(GpmSample* s) {
  std::lock_guard lk(mu);
  ++calls["nvmlGpmSampleFree"];
  delete s;
  return kSuccess;
}
int nvmlGpmSampleGet(void* dev, GpmSample* s) {
  DEV_CALL("nvmlGpmSampleGet", nullptr);
  if (!g->gpm) return kNotSupported;
  s->gpu = g;
  s->seq = g->gpm_gets++;
  return kSuccess;
}
int nvmlGpmMetricsGet(GpmGet* q) {
  std::lock_guard lk(mu);
  ++calls["nvmlGpmMetricsGet"];
  if (q->version != 1) return kVersion;
  if (!q->s1 || !q->s2 || !q->s1->gpu || q->s1->gpu != q->s2->gpu) return kInvalid;
  Gpu* g = q->s1->gpu;
  if (g->lost()) return kLost;
  for (unsigned i = 0; i < q->numMetrics && i < 333; ++i) {
    GpmMetric& m = q->metrics[i];
    m.ret = kSuccess;
    switch (m.id) {
      case 2: m.value = g->next("gpm_sm", 0); break;
      case 3: m.value = g->next("gpm_occ", 0); break;
      case 5: m.value = g->next("gpm_tensor", 0); break;
      case 10: m.value = g->next("gpm_dram", 0); break;
      case 20: m.value = g->next("gpm_pcie_tx_mib", 0); break;
      case 21: m.value = g->next("gpm_pcie_rx_mib", 0); break;
      default: m.ret = kNotSupported;
    }
  }
  return kSuccess;
}
#endif

}  // extern "C"
