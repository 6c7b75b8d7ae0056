// --overlap auto: overlap only where it was measured faster than serial, asked again over time.
#include "check.h"

#include "bmoe/stream/overlap_choice.h"

using namespace bmoe;

// Runs `n` one-token decodes: serial ones take `serial_ms`, overlapped ones `overlap_ms`; returns
// how many were overlapped.
static int run(overlap_choice & c, int n, double serial_ms, double overlap_ms) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const bool o = c.next();
        k += o;
        c.record(o, true, o ? overlap_ms : serial_ms);
    }
    return k;
}

static void test_forced_modes_never_probe() {
    overlap_choice on(overlap_mode::on), off(overlap_mode::off);
    CHECK(run(on, 50, 10, 1000) == 50);   // told on: stays on even when it loses
    CHECK(run(off, 50, 1000, 10) == 0);   // told off: stays off even when it would win
    CHECK(!on.probing() && !off.probing());
}

static void test_probe_interleaves_then_picks_the_faster() {
    overlap_choice c(overlap_mode::automatic, 4, 100);
    std::vector<bool> seen;
    for (int i = 0; i < 8; i++) {
        const bool o = c.next();
        seen.push_back(o);
        c.record(o, true, o ? 60.0 : 100.0);
    }
    CHECK((seen == std::vector<bool>{ false, true, false, true, false, true, false, true }));
    CHECK(!c.probing() && c.chosen());
    CHECK(c.serial_median_ms() == 100.0 && c.overlap_median_ms() == 60.0);
    CHECK(run(c, 50, 100, 60) == 50);
}

static void test_overlap_that_loses_is_not_used() {
    overlap_choice c(overlap_mode::automatic, 4, 100);
    CHECK(run(c, 8, 100, 108) == 4);      // the probe: half of it overlapped
    CHECK(!c.chosen());
    CHECK(run(c, 90, 100, 108) == 0);     // then serial
    // A tie stays serial: overlap must be measured faster.
    overlap_choice t(overlap_mode::automatic, 2, 100);
    run(t, 4, 50, 50);
    CHECK(!t.chosen());
}

static void test_median_ignores_one_outlier() {
    overlap_choice c(overlap_mode::automatic, 5, 100);
    const double serial[5]  = { 100, 100, 100, 100, 100 };
    const double overlap[5] = { 500, 70, 70, 70, 70 };  // one slow overlapped token (a page fault storm)
    int si = 0, oi = 0;
    for (int i = 0; i < 10; i++) {
        const bool o = c.next();
        c.record(o, true, o ? overlap[oi++] : serial[si++]);
    }
    CHECK(c.chosen());
}

static void test_prompt_decodes_are_not_timed_and_reprobe_happens() {
    overlap_choice c(overlap_mode::automatic, 2, 10);
    for (int i = 0; i < 5; i++) {
        const bool o = c.next();
        c.record(o, false, o ? 1.0 : 1000.0);  // prompt ubatches: not comparable, not counted
    }
    CHECK(c.probing());
    run(c, 4, 100, 50);
    CHECK(c.chosen() && !c.probing());
    CHECK(run(c, 10, 100, 50) == 10);     // 10 decodes in force, then a new probe starts
    CHECK(c.probing());
    run(c, 4, 100, 150);                  // the machine changed: overlap now loses
    CHECK(!c.chosen());
}

int main() {
    test_forced_modes_never_probe();
    test_probe_interleaves_then_picks_the_faster();
    test_overlap_that_loses_is_not_used();
    test_median_ignores_one_outlier();
    test_prompt_decodes_are_not_timed_and_reprobe_happens();
    return check_report("overlap_choice");
}
