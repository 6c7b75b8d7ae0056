#pragma once
// System memory as the expert cache's "auto" budget sees it.
#include <cstdint>

namespace bmoe {

// MemAvailable from /proc/meminfo, bytes; 0 where unreadable.
uint64_t mem_available_bytes();

}  // namespace bmoe
