#include "diagnose/finding.h"

namespace ts::diagnose {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Low: return "low";
    case Severity::Medium: return "medium";
    case Severity::High: return "high";
    case Severity::Critical: return "critical";
  }
  return "info";
}

const char* scenario_id(Scenario s) {
  switch (s) {
    case Scenario::Unknown: return "unknown";
    case Scenario::NotOnGpu: return "not-on-gpu";
    case Scenario::CpuOnly: return "cpu-only";
    case Scenario::SmallModelSimpleData: return "small-model-simple-data";
    case Scenario::SmallModelComplexData: return "small-model-complex-data";
    case Scenario::LargeModelSimpleData: return "large-model-simple-data";
    case Scenario::LargeModelComplexData: return "large-model-complex-data";
  }
  return "unknown";
}

const char* scenario_title(Scenario s) {
  switch (s) {
    case Scenario::Unknown: return "Unknown: not enough evidence to classify the run";
    case Scenario::NotOnGpu: return "Not on the GPU: a GPU is available but the work runs on the CPU";
    case Scenario::CpuOnly: return "CPU-only machine: no GPU in use here, the CPU is the device";
    case Scenario::SmallModelSimpleData:
      return "Scenario 1, small model / simple data: GPU low but steady";
    case Scenario::SmallModelComplexData:
      return "Scenario 2, small model / complex data: the CPU (data preprocessing) is the bottleneck";
    case Scenario::LargeModelSimpleData:
      return "Scenario 3, large model / simple data: GPU-bound, the GPU is busy";
    case Scenario::LargeModelComplexData:
      return "Scenario 4, large model / complex data: CPU and GPU both stressed";
  }
  return "";
}

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::DataPipeline: return "data-pipeline";
    case Bottleneck::HostCpu: return "host-cpu";
    case Bottleneck::HostSync: return "host-sync";
    case Bottleneck::Transfer: return "transfer";
    case Bottleneck::Launch: return "launch";
    case Bottleneck::Compute: return "compute";
    case Bottleneck::Memory: return "memory";
    case Bottleneck::Communication: return "communication";
    case Bottleneck::Io: return "io";
    case Bottleneck::Config: return "config";
    case Bottleneck::Health: return "health";
    case Bottleneck::None: return "none";
  }
  return "none";
}

}  // namespace ts::diagnose
