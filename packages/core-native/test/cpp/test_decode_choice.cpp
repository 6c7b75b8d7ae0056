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

static void test_probe_visits_every_arm_in_turn_drops_the_clearly_slower_then_keeps_the_fastest() {
    decode_choice c(mode_setting::automatic, mode_setting::automatic, 4, 100);
    CHECK(c.arms().size() == 4);
    const cost_fn cost = [](decode_mode m) { return m == AHEAD ? 60.0 : m == BOTH ? 70.0 : 100.0; };
    const auto probe = run(c, 14, cost);
    CHECK((probe[0] == SERIAL && probe[1] == OVERLAP && probe[2] == AHEAD && probe[3] == BOTH && probe[4] == SERIAL));
    // Three rounds of all four; then serial and overlap (100 > 1.25 × 60) are not sampled again:
    // a fourth round of the two left ends the probe (70 is clearly above 60).
    CHECK(count(probe, SERIAL) == 3 && count(probe, OVERLAP) == 3 && count(probe, AHEAD) == 4 && count(probe, BOTH) == 4);
    CHECK((probe[12] == AHEAD && probe[13] == BOTH));
    CHECK(!c.probing() && c.chosen() == AHEAD);
    CHECK(c.arms()[2].median_ms == 60.0 && c.arms()[0].median_ms == 100.0 && !c.arms()[0].live);
    CHECK(count(run(c, 50, cost), AHEAD) == 50);
}

static void test_one_knob_forced_the_other_auto() {
    decode_choice c(mode_setting::off, mode_setting::automatic, 3, 100);  // --no-overlap, route-ahead auto
    CHECK(c.arms().size() == 2);
    run(c, 6, [](decode_mode m) { return m.ahead ? 120.0 : 100.0; });    // route-ahead loses here
    CHECK(c.chosen() == SERIAL && !c.probing());
    decode_choice d(mode_setting::automatic, mode_setting::on, 3, 100);   // overlap auto, --route-ahead
    run(d, 6, [](decode_mode m) { return m.overlap ? 80.0 : 100.0; });
    CHECK(d.chosen() == BOTH && !d.probing());
}

static void test_a_tie_or_a_loss_keeps_the_simpler_mode() {
    // A tie: sampled to the most allowed (nothing separates them), then the simpler.
    decode_choice t(mode_setting::automatic, mode_setting::off, 2, 100, 6);
    run(t, 11, [](decode_mode) { return 50.0; });
    CHECK(t.probing());
    run(t, 1, [](decode_mode) { return 50.0; });
    CHECK(!t.probing() && t.chosen() == SERIAL);
    // Overlap 1 % faster is within the tie: the simpler serial is kept.
    decode_choice n(mode_setting::automatic, mode_setting::off, 2, 100, 6);
    run(n, 12, [](decode_mode m) { return m.overlap ? 100.0 : 101.0; });
    CHECK(!n.probing() && n.chosen() == SERIAL);
    // A loss of 8 %: clear after the first four rounds.
    decode_choice l(mode_setting::automatic, mode_setting::off, 4, 100);
    CHECK(count(run(l, 8, [](decode_mode m) { return m.overlap ? 108.0 : 100.0; }), OVERLAP) == 4);
    CHECK(l.chosen() == SERIAL && !l.probing());
    CHECK(count(run(l, 90, [](decode_mode m) { return m.overlap ? 108.0 : 100.0; }), OVERLAP) == 0);
}

static void test_close_leaders_get_more_samples() {
    // 4 % apart: not clear after four rounds, so the probe goes on to the most allowed and then
    // keeps the faster (4 % is more than a tie).
    decode_choice c(mode_setting::automatic, mode_setting::off, 4, 100, 10);
    const cost_fn cost = [](decode_mode m) { return m.overlap ? 96.0 : 100.0; };
    CHECK(count(run(c, 8, cost), OVERLAP) == 4);
    CHECK(c.probing());
    CHECK(count(run(c, 12, cost), OVERLAP) == 6);
    CHECK(!c.probing() && c.chosen() == OVERLAP);
    CHECK(c.arms()[1].samples.size() == 10);
}

// Share of noisy probes (200 seeded runs) that keep overlap when it is `gain` faster. The noise
// is close to that of overlapped q30-8l decodes at a 24 % cache (docs/benchmarks.md: p10 0.91–0.94
// and p90 1.14–1.23 of the median, 16–18 % of tokens over 1.1×): token times within ±8 % of the
// median, and one token in six 1.25× slower.
static double right_choices(double gain, int32_t max_per_arm) {
    int right = 0;
    for (uint32_t seed = 1; seed <= 200; seed++) {
        uint32_t x = seed * 2654435761u;
        auto rnd = [&]() { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return (x % 10000) / 10000.0; };
        decode_choice c(mode_setting::automatic, mode_setting::off, 4, 1000, max_per_arm);
        run(c, 2 * max_per_arm, [&](decode_mode m) {
            const double noise = (0.92 + 0.16 * rnd()) * (rnd() < 0.17 ? 1.25 : 1.0);
            return (m.overlap ? 100.0 * (1 - gain) : 100.0) * noise;
        });
        right += !c.probing() && c.chosen() == OVERLAP;
    }
    return right / 200.0;
}

static void test_noise_the_longer_probe_sees_through() {
    // Four samples each keep the faster of two combinations 5 % apart in about seven runs in ten;
    // a probe that goes on while the gap is within the noise keeps it more often, and one 8 %
    // apart nearly always.
    const double fixed5 = right_choices(0.05, 4), adaptive5 = right_choices(0.05, 12), adaptive8 = right_choices(0.08, 12);
    std::printf("noisy probe keeps a 5 %% faster overlap: 4 samples %.0f %%, adaptive %.0f %%; 8 %% faster: adaptive %.0f %%\n", 100 * fixed5, 100 * adaptive5, 100 * adaptive8);
    CHECK(adaptive5 >= fixed5 + 0.1);
    CHECK(adaptive5 >= 0.8);
    CHECK(adaptive8 >= 0.95);
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

// The chosen way slows down (the disk's speed halved, a neighbour came): a probe starts within a
// window of its decodes, long before reprobe_every, and chooses again.
static void test_a_slowdown_of_the_chosen_way_probes_again_early() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 4, 1000);
    run(c, 8, [](decode_mode m) { return m.overlap ? 50.0 : 100.0; });
    CHECK(c.chosen() == OVERLAP && !c.probing() && c.probes() == 1);
    run(c, 20, [](decode_mode m) { return m.overlap ? 50.0 + (m.ahead ? 0 : 3.0) : 100.0; }); // steady: no probe
    CHECK(!c.probing() && c.drift_probes() == 0);
    int in_force = 0;
    while (!c.probing() && in_force < 100) {
        const decode_mode m = c.next();
        c.record(m, true, m.overlap ? 150.0 : 100.0);
        in_force++;
    }
    // The window is 10 decodes (8, and 500 ms of them at 50 ms): a probe once most of it is slow.
    CHECK(c.probing() && in_force == 6);
    CHECK(c.drift_probes() == 1 && c.probes() == 2);
    run(c, 8, [](decode_mode m) { return m.overlap ? 150.0 : 100.0; });
    CHECK(c.chosen() == SERIAL && !c.probing());
}

// What must not start a probe: decodes that get faster (the cache warming), one slow token, the
// noise the probe saw; and a slowdown of every way starts one probe, not one per window.
static void test_speedups_outliers_and_noise_keep_the_choice() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 4, 1000);
    int k = 0;
    run(c, 8, [&](decode_mode m) { return m.overlap ? (k++ % 2 ? 45.0 : 55.0) : 100.0; });
    CHECK(c.chosen() == OVERLAP && !c.probing());
    run(c, 40, [](decode_mode m) { return m.overlap ? 20.0 : 100.0; }); // faster
    run(c, 40, [&](decode_mode m) { return m.overlap ? (k++ % 8 == 0 ? 500.0 : 50.0) : 100.0; }); // one slow token in 8
    run(c, 40, [&](decode_mode m) { return m.overlap ? 40.0 + (k++ % 5) * 5.0 : 100.0; }); // 40 … 60, median 50
    CHECK(!c.probing() && c.drift_probes() == 0 && c.probes() == 1);
    run(c, 100, [](decode_mode m) { return m.overlap ? 100.0 : 200.0; }); // everything 2x slower
    CHECK(c.drift_probes() == 1 && c.probes() == 2 && c.chosen() == OVERLAP && !c.probing());
}

// A probe biased against the way it keeps (its decodes in force always 50 % slower than probed):
// one drift probe, then the choice holds until the periodic probe, which may drift once more.
static void test_one_drift_probe_between_periodic_ones() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 4, 100);
    bool probing = true;
    int  decodes = 0;
    for (; decodes < 190; decodes++) {
        const decode_mode m = c.next();
        probing = c.probing();
        c.record(m, true, m.overlap ? (probing ? 50.0 : 75.0) : 100.0);
    }
    CHECK(c.drift_probes() == 2);   // once after the first probe, once after the periodic one
    CHECK(c.probes() == 4);         // the first, a drift, the periodic one (100 decodes in force), a drift
    CHECK(c.chosen() == OVERLAP);
}

// Decodes of a few ms: 500 ms of them outnumber the periodic probe's 128, so no drift probe (a
// stall of this VM is tens of ms: many such decodes at once).
static void test_short_decodes_wait_for_the_periodic_probe() {
    decode_choice c(mode_setting::automatic, mode_setting::off, 4, 128);
    run(c, 8, [](decode_mode m) { return m.overlap ? 3.0 : 6.0; });
    CHECK(c.chosen() == OVERLAP && !c.probing());
    run(c, 100, [](decode_mode m) { return m.overlap ? 12.0 : 6.0; });
    CHECK(!c.probing() && c.drift_probes() == 0);
}

int main() {
    test_forced_modes_never_probe();
    test_probe_visits_every_arm_in_turn_drops_the_clearly_slower_then_keeps_the_fastest();
    test_one_knob_forced_the_other_auto();
    test_a_tie_or_a_loss_keeps_the_simpler_mode();
    test_close_leaders_get_more_samples();
    test_noise_the_longer_probe_sees_through();
    test_median_ignores_one_outlier();
    test_prompt_decodes_are_not_timed_and_reprobe_happens();
    test_a_slowdown_of_the_chosen_way_probes_again_early();
    test_speedups_outliers_and_noise_keep_the_choice();
    test_one_drift_probe_between_periodic_ones();
    test_short_decodes_wait_for_the_periodic_probe();
    return check_report("decode_choice");
}
