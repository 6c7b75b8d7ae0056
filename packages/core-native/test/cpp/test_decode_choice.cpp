// --overlap / --route-ahead auto: a combination is used only where it was measured faster, and
// the choice is asked again over time.
#include "check.h"

#include "bmoe/stream/decode_choice.h"

#include <functional>

using namespace bmoe;

using cost_fn = std::function<double(decode_mode)>;

// Runs `n` one-token decodes costing cost(mode) ms; returns the modes used.
static std::vector<decode_mode> run(decode_choice & c, int n, const cost_fn & cost) {
    std::vector<decode_mode> used;
    for (int i = 0; i < n; i++) {
        const decode_mode m = c.next();
        used.push_back(m);
        c.record(m, true, cost(m));
    }
    return used;
}

static int count(const std::vector<decode_mode> & v, decode_mode m) {
    int k = 0;
    for (const auto & x : v) k += x == m;
    return k;
}

static const decode_mode SERIAL{ false, false }, OVERLAP{ true, false }, AHEAD{ false, true }, BOTH{ true, true };

static void test_forced_modes_never_probe() {
    decode_choice on(mode_setting::on, mode_setting::on), off(mode_setting::off, mode_setting::off);
    CHECK(count(run(on, 50, [](decode_mode m) { return m.overlap ? 1000.0 : 10.0; }), BOTH) == 50); // told on: stays on though it loses
    CHECK(count(run(off, 50, [](decode_mode m) { return m.overlap ? 10.0 : 1000.0; }), SERIAL) == 50);
    CHECK(!on.probing() && !off.probing());
    CHECK(on.arms().size() == 1 && off.arms().size() == 1);
}

static void test_probe_visits_every_arm_in_turn_then_keeps_the_fastest() {
    decode_choice c(mode_setting::automatic, mode_setting::automatic, 4, 100);
    CHECK(c.arms().size() == 4);
    const cost_fn cost = [](decode_mode m) { return m == AHEAD ? 60.0 : m == BOTH ? 70.0 : 100.0; };
    const auto probe = run(c, 16, cost);
    CHECK((probe[0] == SERIAL && probe[1] == OVERLAP && probe[2] == AHEAD && probe[3] == BOTH && probe[4] == SERIAL));
    CHECK(count(probe, SERIAL) == 4 && count(probe, BOTH) == 4);
    CHECK(!c.probing() && c.chosen() == AHEAD);
    CHECK(c.arms()[2].median_ms == 60.0 && c.arms()[0].median_ms == 100.0);
    CHECK(count(run(c, 50, cost), AHEAD) == 50);
}

static void test_one_knob_forced_the_other_auto() {
    decode_choice c(mode_setting::off, mode_setting::automatic, 3, 100);  // --no-overlap, route-ahead auto
    CHECK(c.arms().size() == 2);
    run(c, 6, [](decode_mode m) { return m.ahead ? 120.0 : 100.0; });    // route-ahead loses here
    CHECK(c.chosen() == SERIAL);
    decode_choice d(mode_setting::automatic, mode_setting::on, 3, 100);   // overlap auto, --route-ahead
    run(d, 6, [](decode_mode m) { return m.overlap ? 80.0 : 100.0; });
    CHECK(d.chosen() == BOTH);
}

static void test_a_tie_or_a_loss_keeps_the_simpler_mode() {
    decode_choice t(mode_setting::automatic, mode_setting::off, 2, 100);
    run(t, 4, [](decode_mode) { return 50.0; });
    CHECK(t.chosen() == SERIAL);
    decode_choice l(mode_setting::automatic, mode_setting::off, 4, 100);
    CHECK(count(run(l, 8, [](decode_mode m) { return m.overlap ? 108.0 : 100.0; }), OVERLAP) == 4);
    CHECK(l.chosen() == SERIAL);
    CHECK(count(run(l, 90, [](decode_mode m) { return m.overlap ? 108.0 : 100.0; }), OVERLAP) == 0);
}

static void test_median_ignores_one_outlier() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 5, 100);
    int k = 0;
    run(c, 10, [&](decode_mode m) { return m.overlap ? (k++ == 0 ? 500.0 : 70.0) : 100.0; }); // one slow overlapped token
    CHECK(c.chosen() == OVERLAP);
}

static void test_prompt_decodes_are_not_timed_and_reprobe_happens() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 2, 10);
    for (int i = 0; i < 5; i++) {
        const decode_mode m = c.next();
        c.record(m, false, m.overlap ? 1.0 : 1000.0); // prompt ubatches: not counted
    }
    CHECK(c.probing());
    run(c, 4, [](decode_mode m) { return m.overlap ? 50.0 : 100.0; });
    CHECK(c.chosen() == OVERLAP && !c.probing());
    CHECK(count(run(c, 10, [](decode_mode m) { return m.overlap ? 50.0 : 100.0; }), OVERLAP) == 10);
    CHECK(c.probing());                   // 10 decodes in force, then a new probe
    run(c, 4, [](decode_mode m) { return m.overlap ? 150.0 : 100.0; });
    CHECK(c.chosen() == SERIAL);          // the machine changed: overlap now loses
}

int main() {
    test_forced_modes_never_probe();
    test_probe_visits_every_arm_in_turn_then_keeps_the_fastest();
    test_one_knob_forced_the_other_auto();
    test_a_tie_or_a_loss_keeps_the_simpler_mode();
    test_median_ignores_one_outlier();
    test_prompt_decodes_are_not_timed_and_reprobe_happens();
    return check_report("decode_choice");
}
