#include "doctor/checks/checks.h"

namespace ts::doctor {

const char* status_name(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::warn: return "warn";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
  }
  return "skip";
}

std::vector<Check> run_checks(const DoctorFacts& f) {
  return {check_nvidia_driver(f),   check_torch_installed(f), check_torch_cuda_build(f),
          check_cuda_usable(f),     check_torch_gpu_generation(f), check_cpu_blas(f),
          check_openmp_runtimes(f), check_thread_budget(f),   check_shm_size(f),
          check_debug_env(f),
          check_pcie_link(f),       check_gpu_busy(f),        check_gpu_throttle(f),
          check_gpu_errors(f)};
}

}  // namespace ts::doctor
