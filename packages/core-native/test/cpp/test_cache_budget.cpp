// Cache budget units: --cache-mb N|auto to the slots it buys, the working-set guard, auto sizing.
#include "check.h"

#include "bmoe/cache/cache_budget.h"

using namespace bmoe;

static constexpr uint64_t MiB = 1ull << 20;

// qwen3-30b-a3b with 8 layers, Q4_K experts: 2.53 MiB per expert, top-8.
static cache_shape qwen8() {
    cache_shape s;
    s.slot_bytes        = 2654208;
    s.working_set_slots = 8 * 8;
    s.max_slots         = 8 * 128;
    s.expert_bytes      = s.slot_bytes * 8 * 128;
    return s;
}

static void test_fixed_budget() {
    const cache_shape s = qwen8();
    cache_budget_request r;
    r.mib = 1000;
    cache_budget b = plan_cache_budget(r, s, 0);
    CHECK(b.error.empty() && b.warning.empty());
    CHECK(b.bytes == 1000 * MiB && b.slots == (int32_t) (1000 * MiB / s.slot_bytes));
    r.mib = 0; // no cache
    b = plan_cache_budget(r, s, 0);
    CHECK(b.error.empty() && b.bytes == 0 && b.slots == 0);
    r.mib = 1u << 20; // more than every expert: capped at every slot
    b = plan_cache_budget(r, s, 0);
    CHECK(b.slots == s.max_slots);
}

static void test_guard() {
    const cache_shape s = qwen8();
    cache_budget_request r;
    r.mib = 100; // below 64 experts x 2.53 MiB = 162 MiB
    cache_budget b = plan_cache_budget(r, s, 0);
    CHECK(b.error.find("100.0 MiB") != std::string::npos && b.error.find("162.0 MiB") != std::string::npos);
    CHECK(b.error.find("--force-cache") != std::string::npos && b.error.find('\n') == std::string::npos);
    r.force = true;
    b = plan_cache_budget(r, s, 0);
    CHECK(b.error.empty() && b.slots == (int32_t) (100 * MiB / s.slot_bytes));
    r.force = false;
    r.mib   = 161; // just below the working set (exactly 162 MiB here): refused; 162 is enough
    CHECK(!plan_cache_budget(r, s, 0).error.empty());
    r.mib = 162;
    CHECK(plan_cache_budget(r, s, 0).error.empty());
}

static void test_auto() {
    const cache_shape s = qwen8();
    cache_budget_request r;
    r.is_auto  = true;
    r.floor_mib = 1500;
    r.ceil_mib = 800;
    cache_budget b = plan_cache_budget(r, s, 6000 * MiB); // ceiling
    CHECK(b.bytes == 800 * MiB && b.warning.empty());
    r.ceil_mib = 0;
    b = plan_cache_budget(r, s, 1800 * MiB); // MemAvailable - floor
    CHECK(b.bytes == 300 * MiB && b.slots == (int32_t) (300 * MiB / s.slot_bytes));
    b = plan_cache_budget(r, s, 100000 * MiB); // every expert fits: no more than all of them
    CHECK(b.bytes == s.expert_bytes && b.slots == s.max_slots);
    b = plan_cache_budget(r, s, 1600 * MiB); // 100 MiB above the floor < working set: no cache, warned
    CHECK(b.bytes == 0 && b.slots == 0 && b.error.empty() && b.warning.find("working set") != std::string::npos);
    b = plan_cache_budget(r, s, 1000 * MiB); // below the floor
    CHECK(b.bytes == 0 && b.slots == 0);
}

int main() {
    test_fixed_budget();
    test_guard();
    test_auto();
    return check_report("test_cache_budget");
}
