#include "cache_policy.h"

#include <algorithm>
#include <cstdio>

admit_result cache_policy::admit(const expert_key & k, uint64_t bytes) {
    admit_result r;
    auto it = index.find(k);
    if (it != index.end()) {
        lru.splice(lru.begin(), lru, it->second);
        r.hit = true;
        return r;
    }
    if (bytes > budget) {
        return r;
    }
    while (resident + bytes > budget && !lru.empty()) {
        const entry & victim = lru.back();
        r.evicted.push_back(victim.key);
        resident -= victim.bytes;
        index.erase(victim.key);
        lru.pop_back();
    }
    lru.push_front({ k, bytes });
    index[k] = lru.begin();
    resident += bytes;
    r.admitted = true;
    return r;
}

bool cache_policy::erase(const expert_key & k) {
    auto it = index.find(k);
    if (it == index.end()) return false;
    resident -= it->second->bytes;
    lru.erase(it->second);
    index.erase(it);
    return true;
}

std::vector<expert_key> cache_policy::order() const {
    std::vector<expert_key> out;
    out.reserve(lru.size());
    for (const auto & e : lru) out.push_back(e.key);
    return out;
}

uint64_t routed_working_set_bytes(int32_t n_layer, int32_t top_k, uint64_t expert_bytes) {
    return (uint64_t) std::max(0, n_layer) * (uint64_t) std::max(0, top_k) * expert_bytes;
}

uint64_t auto_cache_budget(uint64_t mem_available, uint64_t floor_bytes, uint64_t ceil_bytes, uint64_t total_expert_bytes) {
    const uint64_t above = mem_available > floor_bytes ? mem_available - floor_bytes : 0;
    return std::min({ above, ceil_bytes, total_expert_bytes });
}

std::string check_cache_budget(uint64_t budget, uint64_t working_set, bool force) {
    if (budget == 0 || budget >= working_set || force) {
        return "";
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "cache budget %.1f MiB is below one token's routed working set of %.1f MiB: LRU would never hit; "
                  "use 0 (no cache), at least %.0f MiB, or --force-cache",
                  budget / 1048576.0, working_set / 1048576.0, (working_set + 1048575) / 1048576.0);
    return buf;
}
