#pragma once
// NVML types and constants declared by us (NVIDIA's NVML API reference), so that nothing from
// NVIDIA is needed at build time: the library is loaded with dlopen at run time.
// Layouts follow nvml.h; only what trainscope reads is declared.
#include <cstdint>

namespace ts::sample::nvml {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;
typedef int nvmlReturn_t;

enum : int {
  SUCCESS = 0,
  ERROR_UNINITIALIZED = 1,
  ERROR_INVALID_ARGUMENT = 2,
  ERROR_NOT_SUPPORTED = 3,
  ERROR_NO_PERMISSION = 4,
  ERROR_NOT_FOUND = 6,
  ERROR_INSUFFICIENT_SIZE = 7,
  ERROR_DRIVER_NOT_LOADED = 9,
  ERROR_FUNCTION_NOT_FOUND = 13,
  ERROR_GPU_IS_LOST = 15,
  ERROR_NO_DATA = 21,
  ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  ERROR_UNKNOWN = 999,
};

enum : unsigned { TEMPERATURE_GPU = 0 };
enum : unsigned { CLOCK_GRAPHICS = 0, CLOCK_SM = 1, CLOCK_MEM = 2 };
enum : unsigned { PCIE_UTIL_TX_BYTES = 0, PCIE_UTIL_RX_BYTES = 1 };
enum : unsigned {
  SAMPLE_TOTAL_POWER = 0,
  SAMPLE_GPU_UTILIZATION = 1,
  SAMPLE_MEMORY_UTILIZATION = 2,
  SAMPLE_PROCESSOR_CLK = 5,
  SAMPLE_MEMORY_CLK = 6,
};
enum : int {
  VALUE_TYPE_DOUBLE = 0,
  VALUE_TYPE_UNSIGNED_INT = 1,
  VALUE_TYPE_UNSIGNED_LONG = 2,
  VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  VALUE_TYPE_SIGNED_LONG_LONG = 4,
  VALUE_TYPE_SIGNED_INT = 5,
};

struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
constexpr unsigned kMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2u << 24);  // 40 | 2<<24

// nvmlPciInfo_t as of the _v2/_v3 calls; the v1 call wrote busId[16] at the same place
// as busIdLegacy, so that field is read as a fallback.
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

// nvmlProcessInfo_v1_t (16 bytes, unversioned call) and v2/v3 (24 bytes).
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16 && sizeof(nvmlProcessInfo_t) == 24);

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
};
struct nvmlSample_t {
  unsigned long long timeStamp;  // microseconds
  nvmlValue_t sampleValue;
};

// GPM (Hopper and newer).
struct nvmlGpmSupport_t {
  unsigned int version;  // 1
  unsigned int isSupportedDevice;
};
enum : unsigned {
  GPM_GRAPHICS_UTIL = 1,
  GPM_SM_UTIL = 2,
  GPM_SM_OCCUPANCY = 3,
  GPM_INTEGER_UTIL = 4,
  GPM_ANY_TENSOR_UTIL = 5,
  GPM_DRAM_BW_UTIL = 10,
  GPM_PCIE_TX_PER_SEC = 20,
  GPM_PCIE_RX_PER_SEC = 21,
};
struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
// The header grew its array 98 -> 210 -> 333 with the version staying 1: declare the largest.
constexpr int kGpmMetricMax = 333;
struct nvmlGpmMetricsGet_t {
  unsigned int version;  // 1
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[kGpmMetricMax];
};

}  // namespace ts::sample::nvml
