#pragma once
// How much memory this process may still take: the kernel's MemAvailable, lowered to what the
// cgroup (v2 memory.max - memory.current) leaves when that is less. 0 when unknown.
#include <cstdint>

namespace ts {

uint64_t available_memory_bytes();

}  // namespace ts
