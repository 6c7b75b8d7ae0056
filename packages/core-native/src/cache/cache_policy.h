#pragma once
// Expert cache policy: which (layer, expert) slices stay resident under a byte budget.
// Pure bookkeeping, no I/O and no memory: the streamer asks `admit` before reading a slice and
// releases the evicted slices' memory itself. Unit-tested in test/cpp/test_cache_policy.cpp.
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

struct expert_key {
    int32_t layer  = 0;
    int32_t expert = 0;
    bool operator==(const expert_key & o) const { return layer == o.layer && expert == o.expert; }
};

struct expert_key_hash {
    size_t operator()(const expert_key & k) const { return ((size_t) (uint32_t) k.layer << 32) ^ (uint32_t) k.expert; }
};

struct admit_result {
    bool                    hit      = false; // already resident: no read needed
    bool                    admitted = false; // on a miss: the slice now counts as resident
    std::vector<expert_key> evicted;          // released to make room, least recently used first
};

// Least-recently-used over whole experts (all projections of one expert in one layer move together,
// since routing picks them together).
struct cache_policy {
    explicit cache_policy(uint64_t budget_bytes) : budget(budget_bytes) {}

    uint64_t budget   = 0;
    uint64_t resident = 0; // bytes counted as resident; never exceeds budget

    // Looks `k` up; on a hit it becomes most recently used. On a miss, evicts LRU entries until
    // `bytes` fit and admits it; an entry larger than the whole budget is not admitted.
    admit_result admit(const expert_key & k, uint64_t bytes);
    bool         contains(const expert_key & k) const { return index.count(k) != 0; }
    // Drops `k` if present (the streamer shrinking its pool); returns whether it was resident.
    bool         erase(const expert_key & k);
    size_t       size() const { return lru.size(); }
    // Most recently used first.
    std::vector<expert_key> order() const;

  private:
    struct entry {
        expert_key key;
        uint64_t   bytes;
    };
    std::list<entry>                                                          lru; // front = most recent
    std::unordered_map<expert_key, std::list<entry>::iterator, expert_key_hash> index;
};

// The bytes one token routes through: every layer's top-k experts (all projections).
uint64_t routed_working_set_bytes(int32_t n_layer, int32_t top_k, uint64_t expert_bytes);

// "auto" budget: what MemAvailable leaves above a floor, clamped to the ceiling and to the total
// expert bytes (more than that is never useful). 0 when nothing is left above the floor.
uint64_t auto_cache_budget(uint64_t mem_available, uint64_t floor_bytes, uint64_t ceil_bytes, uint64_t total_expert_bytes);

// A cache smaller than one token's working set has a hit rate of exactly zero under LRU (the
// least recently used entry is always the soonest needed again): refuse it unless forced.
// Returns "" when the budget is acceptable, else a one-line reason with both numbers.
std::string check_cache_budget(uint64_t budget, uint64_t working_set, bool force);
