// Cache policy units, as the streamer uses them: LRU over whole experts in a cache of N slots.
#include "check.h"

#include "bmoe/cache/cache_policy.h"

#include <random>

using namespace bmoe;

static void test_occupancy_never_exceeds_capacity() {
    cache_policy c(10);
    std::mt19937 rng(42);
    for (int i = 0; i < 20000; i++) {
        const expert_key k{ (int32_t) (rng() % 8), (int32_t) (rng() % 64) };
        admit_result r = c.admit(k);
        CHECK(c.size() <= c.capacity);
        CHECK(r.hit || (r.admitted && r.evicted.size() <= 1));
        CHECK(c.contains(k));
    }
}

static void test_lru_order_and_hits() {
    cache_policy c(3);
    CHECK(!c.admit({ 0, 1 }).hit);
    CHECK(!c.admit({ 0, 2 }).hit);
    CHECK(!c.admit({ 0, 3 }).hit);
    CHECK(c.admit({ 0, 1 }).hit); // 1 becomes most recent: order 1,3,2
    admit_result r = c.admit({ 0, 4 });
    CHECK(r.admitted && r.evicted.size() == 1 && r.evicted[0] == (expert_key{ 0, 2 }));
    auto order = c.order();
    CHECK(order.size() == 3 && order[0] == (expert_key{ 0, 4 }) && order[1] == (expert_key{ 0, 1 }) && order[2] == (expert_key{ 0, 3 }));
}

// The streamer shrinks its pool after a prompt: it erases the experts of the slots going away,
// then lowers the capacity; later admissions evict down to the new capacity.
static void test_erase_then_shrink() {
    cache_policy c(4);
    for (int e = 0; e < 4; e++) c.admit({ 1, e });
    CHECK(c.erase({ 1, 3 }) && c.erase({ 1, 0 }) && !c.erase({ 1, 0 }));
    c.capacity = 2;
    CHECK(c.size() == 2 && c.contains({ 1, 1 }) && c.contains({ 1, 2 }));
    admit_result r = c.admit({ 2, 0 });
    CHECK(r.admitted && r.evicted.size() == 1 && r.evicted[0] == (expert_key{ 1, 1 }));
}

static void test_zero_capacity_admits_nothing() {
    cache_policy c(0);
    admit_result r = c.admit({ 0, 0 });
    CHECK(!r.admitted && !r.hit && c.size() == 0);
}

// A cache below one token's working set under LRU never hits on a cyclic access pattern: the
// budget guard (test_cache_budget) exists for this.
static void test_below_working_set_never_hits() {
    const int layers = 4, topk = 2;
    cache_policy c(layers * topk - 1);
    int hits = 0;
    for (int tok = 0; tok < 50; tok++) {
        for (int l = 0; l < layers; l++) {
            for (int e = 0; e < topk; e++) hits += c.admit({ l, e }).hit;
        }
    }
    CHECK(hits == 0);
    cache_policy big(layers * topk);
    hits = 0;
    for (int tok = 0; tok < 50; tok++) {
        for (int l = 0; l < layers; l++) {
            for (int e = 0; e < topk; e++) hits += big.admit({ l, e }).hit;
        }
    }
    CHECK(hits == 49 * layers * topk);
}

int main() {
    test_occupancy_never_exceeds_capacity();
    test_lru_order_and_hits();
    test_erase_then_shrink();
    test_zero_capacity_admits_nothing();
    test_below_working_set_never_hits();
    return check_report("test_cache_policy");
}
