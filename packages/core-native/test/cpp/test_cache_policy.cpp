// Cache policy units: budget accounting, LRU order, the working-set guard, auto sizing.
#include "check.h"

#include "../../src/cache/cache_policy.h"

#include <random>

static void test_accounting_never_exceeds_budget() {
    cache_policy c(10 * 100);
    std::mt19937 rng(42);
    for (int i = 0; i < 20000; i++) {
        const expert_key k{ (int32_t) (rng() % 8), (int32_t) (rng() % 64) };
        const uint64_t   bytes = 100 + (rng() % 3) * 50; // mixed slice sizes
        admit_result r = c.admit(k, bytes);
        CHECK(c.resident <= c.budget);
        CHECK(r.hit || r.admitted);
        CHECK(c.contains(k));
    }
}

static void test_lru_order_and_hits() {
    cache_policy c(300);
    CHECK(!c.admit({ 0, 1 }, 100).hit);
    CHECK(!c.admit({ 0, 2 }, 100).hit);
    CHECK(!c.admit({ 0, 3 }, 100).hit);
    CHECK(c.admit({ 0, 1 }, 100).hit); // 1 becomes most recent: order 1,3,2
    admit_result r = c.admit({ 0, 4 }, 100);
    CHECK(r.admitted && r.evicted.size() == 1 && r.evicted[0] == (expert_key{ 0, 2 }));
    auto order = c.order();
    CHECK(order.size() == 3 && order[0] == (expert_key{ 0, 4 }) && order[1] == (expert_key{ 0, 1 }) && order[2] == (expert_key{ 0, 3 }));
    // A larger entry evicts as many LRU entries as it needs, oldest first.
    r = c.admit({ 1, 0 }, 250);
    CHECK(r.evicted.size() == 3 && r.evicted[0] == (expert_key{ 0, 3 }) && r.evicted[1] == (expert_key{ 0, 1 }));
    CHECK(c.resident == 250 && c.size() == 1);
    // Bigger than the whole budget: not admitted, nothing evicted.
    r = c.admit({ 2, 0 }, 301);
    CHECK(!r.admitted && !r.hit && r.evicted.empty() && c.resident == 250);
}

static void test_zero_budget_admits_nothing() {
    cache_policy c(0);
    admit_result r = c.admit({ 0, 0 }, 1);
    CHECK(!r.admitted && !r.hit && c.size() == 0);
}

// A cache below one token's working set under LRU never hits on a cyclic access pattern: the
// guard exists for this.
static void test_below_working_set_never_hits() {
    const int layers = 4, topk = 2;
    cache_policy c((uint64_t) (layers * topk - 1) * 100);
    int hits = 0;
    for (int tok = 0; tok < 50; tok++) {
        for (int l = 0; l < layers; l++) {
            for (int e = 0; e < topk; e++) hits += c.admit({ l, e }, 100).hit;
        }
    }
    CHECK(hits == 0);
    cache_policy big((uint64_t) layers * topk * 100);
    hits = 0;
    for (int tok = 0; tok < 50; tok++) {
        for (int l = 0; l < layers; l++) {
            for (int e = 0; e < topk; e++) hits += big.admit({ l, e }, 100).hit;
        }
    }
    CHECK(hits == 49 * layers * topk);
}

static void test_guard() {
    const uint64_t ws = routed_working_set_bytes(8, 8, 2654208); // qwen3-30b-a3b, 8 layers, Q4_K experts
    CHECK(ws == 8ull * 8 * 2654208);
    CHECK(check_cache_budget(0, ws, false).empty());          // 0 = no cache: allowed
    CHECK(check_cache_budget(ws, ws, false).empty());
    CHECK(!check_cache_budget(ws - 1, ws, false).empty());
    CHECK(check_cache_budget(ws - 1, ws, true).empty());       // forced
    const std::string msg = check_cache_budget(100ull << 20, ws, false);
    CHECK(msg.find("100.0 MiB") != std::string::npos && msg.find("162.0 MiB") != std::string::npos);
}

static void test_auto_budget() {
    const uint64_t MiB = 1ull << 20;
    CHECK(auto_cache_budget(6000 * MiB, 1500 * MiB, 3000 * MiB, 20000 * MiB) == 3000 * MiB); // ceiling
    CHECK(auto_cache_budget(4000 * MiB, 1500 * MiB, 8000 * MiB, 20000 * MiB) == 2500 * MiB); // MemAvailable - floor
    CHECK(auto_cache_budget(4000 * MiB, 1500 * MiB, 8000 * MiB, 1000 * MiB) == 1000 * MiB);  // all experts fit
    CHECK(auto_cache_budget(1000 * MiB, 1500 * MiB, 8000 * MiB, 1000 * MiB) == 0);           // below the floor
}

int main() {
    test_accounting_never_exceeds_budget();
    test_lru_order_and_hits();
    test_zero_budget_admits_nothing();
    test_below_working_set_never_hits();
    test_guard();
    test_auto_budget();
    return check_report("test_cache_policy");
}
