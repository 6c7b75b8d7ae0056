#pragma once
// The expert cache's budget, in one unit: `--cache-mb N|auto` (MiB, as users give it) becomes the
// number of slots it buys, here and nowhere else. Pure: MemAvailable is an argument (sys/ reads
// it), so every rule is unit-tested in test/cpp/test_cache_budget.cpp.
#include <cstdint>
#include <string>

namespace bmoe {

// What the user asked for (stream_config's cache fields).
struct cache_budget_request {
    bool     is_auto   = false;  // --cache-mb auto
    uint64_t mib       = 0;      // --cache-mb N (0 = no cache)
    uint64_t ceil_mib  = 0;      // --cache-ceil-mb (auto only; 0 = none)
    uint64_t floor_mib = 1024;   // MemAvailable that auto leaves to the system
    bool     force     = false;  // --force-cache
};

// The model's side of the sum.
struct cache_shape {
    uint64_t slot_bytes        = 0;  // one expert, all projections, as a slot holds it
    int64_t  working_set_slots = 0;  // one token's routed experts: MoE layers x top-k
    int64_t  max_slots         = 0;  // every expert of every layer
    uint64_t expert_bytes      = 0;  // all expert tensors (auto never asks for more)
};

struct cache_budget {
    uint64_t    bytes   = 0;   // the budget in force (auto resolved), MiB x 2^20 or less
    int32_t     slots   = 0;   // what it buys
    std::string warning;       // auto had too little room and fell back to no cache
    std::string error;         // the request is refused (one line, both sizes named)
};

// A cache smaller than one token's working set has a hit rate of exactly zero under LRU (the
// least recently used entry is always the soonest needed again): refused unless forced; auto
// falls back to no cache instead.
cache_budget plan_cache_budget(const cache_budget_request & r, const cache_shape & s, uint64_t mem_available_bytes);

}  // namespace bmoe
