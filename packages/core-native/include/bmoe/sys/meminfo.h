#pragma once
// System memory as the expert cache's "auto" budget sees it: what this process can still take
// without being killed — MemAvailable, and inside a memory cgroup (a container, a `bench matrix
// --mem-limit` row) no more than the cgroup's limit minus its usage.
#include <cstdint>
#include <string>

namespace bmoe {

// min(MemAvailable, the tightest room left by this process's memory cgroup and its ancestors,
// v1 or v2), bytes; 0 where MemAvailable is unreadable.
uint64_t mem_available_bytes();

// The same, reading /proc and /sys under `root` ("" = the real ones): unit tests give a fake tree.
uint64_t mem_available_bytes_at(const std::string & root);

}  // namespace bmoe
