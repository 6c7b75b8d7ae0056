#pragma once
// Expert cache policy: which experts stay resident in a cache of N slots. One slot holds one
// expert of one layer, all its projections (routing picks them together, so they move together).
// Pure bookkeeping, no I/O and no memory: the streamer asks `admit` before reading an expert and
// releases the evicted experts' slots itself. Unit-tested in test/cpp/test_cache_policy.cpp.
#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace bmoe {

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
    bool                    admitted = false; // on a miss: the expert now holds a slot
    std::vector<expert_key> evicted;          // gave up their slots, least recently used first
};

// Least-recently-used over whole experts, `capacity` slots.
struct cache_policy {
    explicit cache_policy(int32_t capacity_slots) : capacity(capacity_slots) {}

    int32_t capacity = 0;

    // Looks `k` up; on a hit it becomes most recently used. On a miss, evicts LRU entries until a
    // slot is free and admits it; with no capacity at all nothing is admitted.
    admit_result admit(const expert_key & k);
    bool         contains(const expert_key & k) const { return index.count(k) != 0; }
    // Drops `k` if present (the streamer shrinking its pool); returns whether it was resident.
    bool         erase(const expert_key & k);
    int32_t      size() const { return (int32_t) lru.size(); }
    // Most recently used first.
    std::vector<expert_key> order() const;

  private:
    std::list<expert_key>                                                          lru; // front = most recent
    std::unordered_map<expert_key, std::list<expert_key>::iterator, expert_key_hash> index;
};

}  // namespace bmoe
