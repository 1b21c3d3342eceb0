#pragma once
// The doctor's checks, one per file in this folder. Each is a pure function of DoctorFacts:
// it reads the facts it needs and says skip when they are missing.
#include <vector>

#include "doctor/check.h"
#include "doctor/facts.h"

namespace ts::doctor {

Check check_nvidia_driver(const DoctorFacts& f);      // nvidia_driver.cpp
Check check_torch_installed(const DoctorFacts& f);    // torch_installed.cpp
Check check_torch_cuda_build(const DoctorFacts& f);   // torch_cuda_build.cpp
Check check_cuda_usable(const DoctorFacts& f);        // cuda_usable.cpp
Check check_torch_gpu_generation(const DoctorFacts& f);  // torch_gpu_generation.cpp
Check check_cpu_blas(const DoctorFacts& f);           // cpu_blas.cpp
Check check_openmp_runtimes(const DoctorFacts& f);    // openmp_runtimes.cpp
Check check_thread_budget(const DoctorFacts& f);      // thread_budget.cpp
Check check_shm_size(const DoctorFacts& f);           // shm_size.cpp
Check check_debug_env(const DoctorFacts& f);          // debug_env.cpp
Check check_pcie_link(const DoctorFacts& f);          // pcie_link.cpp
Check check_gpu_busy(const DoctorFacts& f);           // gpu_busy.cpp
Check check_gpu_throttle(const DoctorFacts& f);       // gpu_throttle.cpp
Check check_gpu_errors(const DoctorFacts& f);         // gpu_errors.cpp

// All of them, in the order a reader goes through them (driver first, GPU health last).
std::vector<Check> run_checks(const DoctorFacts& f);

}  // namespace ts::doctor
