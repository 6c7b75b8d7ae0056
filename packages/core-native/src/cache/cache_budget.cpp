#include "bmoe/cache/cache_budget.h"

#include <algorithm>
#include <cstdio>

namespace bmoe {

namespace {

constexpr uint64_t MiB = 1ull << 20;

std::string mib(uint64_t bytes, int decimals = 1) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f MiB", decimals, (double) bytes / (double) MiB);
    return buf;
}

}  // namespace

cache_budget plan_cache_budget(const cache_budget_request & r, const cache_shape & s, uint64_t mem_available_bytes) {
    cache_budget out;
    const uint64_t working_set = (uint64_t) std::max<int64_t>(0, s.working_set_slots) * s.slot_bytes;
    if (r.is_auto) {
        // What MemAvailable leaves above the floor, capped by the ceiling and by every expert plus
        // one layer's worth of slots (more is never useful).
        const uint64_t floor = r.floor_mib * MiB;
        const uint64_t above = mem_available_bytes > floor ? mem_available_bytes - floor : 0;
        const uint64_t ceil  = r.ceil_mib ? r.ceil_mib * MiB : s.expert_bytes;
        out.bytes = std::min({ above, ceil, s.expert_bytes + s.slot_bytes * (uint64_t) std::max<int64_t>(0, s.max_slots) });
        if (out.bytes < working_set) {
            out.warning = "cache-mb auto: only " + std::to_string(out.bytes / MiB) + " MiB available above the floor, below one token's working set (" +
                          std::to_string(working_set / MiB) + " MiB): streaming without a cache";
            out.bytes = 0;
        }
    } else {
        out.bytes = r.mib * MiB;
        if (out.bytes != 0 && out.bytes < working_set && !r.force) {
            out.error = "cache budget " + mib(out.bytes) + " is below one token's routed working set of " + mib(working_set) +
                        ": LRU would never hit; use 0 (no cache), at least " + mib(working_set + MiB - 1, 0) + ", or --force-cache";
            return out;
        }
    }
    if (s.slot_bytes > 0) out.slots = (int32_t) std::min<uint64_t>(out.bytes / s.slot_bytes, (uint64_t) std::max<int64_t>(0, s.max_slots));
    return out;
}

}  // namespace bmoe
