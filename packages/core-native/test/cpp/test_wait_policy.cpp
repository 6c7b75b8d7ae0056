// compute/wait_policy: spin while the waits end within the spin, sleep when most outlast it, and
// probe the spin again after 8, 16, … 128 sleeping steps.
#include "check.h"

#include "bmoe/compute/wait_policy.h"

#include <limits>

using namespace bmoe;

static constexpr int64_t SPIN = wait_policy::default_spin_ns;

// One step under p: returns the spin it ran with; `lost` of its 100 waits outlasted the spin.
static int64_t step(wait_policy & p, uint64_t lost) {
    const int64_t spin = p.next_spin();
    p.observe(100, spin == 0 ? 100 : lost);  // sleeping at once: every wait sleeps
    return spin;
}

static void test_poll_follows_the_barrier_choice() {
    wait_policy p;
    CHECK(p.next_poll() == 1);
    step(p, 90);
    step(p, 90);
    CHECK(p.sleeping() && p.next_poll() == 0);
    wait_policy up, spin, sleep;
    up.mode = wait_mode::upstream;
    spin.mode = wait_mode::spin;
    sleep.mode = wait_mode::sleep;
    CHECK(up.next_poll() == -1 && spin.next_poll() == 50 && sleep.next_poll() == 0);
}

// Polling between decodes pays only through short gaps: a 0.2 ms gap (one sequence sampled) keeps
// it, gaps near 1 ms (four sequences sampled in one step) stop it, short ones bring it back, and an
// idle pause (a new request after seconds) is not counted as the loop's rhythm.
static void test_poll_stops_while_the_gaps_between_decodes_are_long() {
    wait_policy p;
    p.observe_gap(0.2);
    CHECK(p.next_poll() == 1);
    for (int i = 0; i < 3; i++) p.observe_gap(0.9);
    CHECK(p.gap_ms() > wait_policy::poll_gap_max_ms && p.next_poll() == 0);
    for (int i = 0; i < 3; i++) p.observe_gap(0.2);
    CHECK(p.next_poll() == 1);
    p.observe_gap(5000);
    CHECK(p.next_poll() == 1);
    // Sleeping at the barriers still means no polling, whatever the gaps.
    step(p, 90);
    step(p, 90);
    CHECK(p.sleeping() && p.next_poll() == 0);
    // The fixed modes ignore the gaps.
    wait_policy spin;
    spin.mode = wait_mode::spin;
    spin.observe_gap(10);
    CHECK(spin.next_poll() == 50);
}

static void test_fixed_modes_never_change() {
    wait_policy spin, sleep, up;
    spin.mode = wait_mode::spin;
    sleep.mode = wait_mode::sleep;
    up.mode = wait_mode::upstream;
    for (int i = 0; i < 20; i++) {
        CHECK(step(spin, 100) == std::numeric_limits<int64_t>::max());
        CHECK(step(sleep, 0) == 0);
        CHECK(step(up, 100) == -1);
    }
}

static void test_auto_keeps_spinning_while_waits_end_within_the_spin() {
    wait_policy p;
    for (int i = 0; i < 100; i++) CHECK(step(p, 50) == SPIN);  // half lost is not most
    CHECK(!p.sleeping());
}

// One lost step (the event loop took a core for a moment) does not make auto sleep; two in a row do.
static void test_a_single_lost_step_keeps_spinning() {
    wait_policy p;
    for (int i = 0; i < 10; i++) {
        CHECK(step(p, 90) == SPIN);
        CHECK(step(p, 5) == SPIN);
    }
    CHECK(!p.sleeping());
    // A step that says nothing (too few waits) neither breaks nor extends a run of lost ones.
    step(p, 90);
    p.observe(2, 2);
    step(p, 90);
    CHECK(p.sleeping());
}

static void test_auto_sleeps_when_most_waits_outlast_the_spin_then_probes_with_backoff() {
    wait_policy p;
    CHECK(step(p, 90) == SPIN);
    CHECK(!p.sleeping());
    CHECK(step(p, 90) == SPIN);
    CHECK(p.sleeping());
    // 4 sleeping steps, then one probe with the spin; a lost probe doubles the wait up to 128.
    int expected_gap = wait_policy::probe_min;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < expected_gap; i++) CHECK(step(p, 90) == 0);
        CHECK(step(p, 90) == SPIN);
        CHECK(p.sleeping());
        expected_gap = expected_gap * 2 > wait_policy::probe_max ? wait_policy::probe_max : expected_gap * 2;
    }
    CHECK(expected_gap == wait_policy::probe_max);
}

static void test_a_won_probe_returns_to_spinning_and_resets_the_backoff() {
    wait_policy p;
    step(p, 90);
    step(p, 90);
    for (int i = 0; i < wait_policy::probe_min; i++) step(p, 90);
    CHECK(step(p, 5) == SPIN);  // the probe: the neighbour left
    CHECK(!p.sleeping());
    CHECK(step(p, 5) == SPIN);
    CHECK(step(p, 90) == SPIN);  // lost twice again: sleep, and the next probe comes after probe_min
    CHECK(step(p, 90) == SPIN);
    for (int i = 0; i < wait_policy::probe_min; i++) CHECK(step(p, 0) == 0);
    CHECK(step(p, 0) == SPIN);
}

static void test_steps_with_few_waits_say_nothing() {
    wait_policy p;
    p.observe(3, 3);  // a one-op graph: no decision
    CHECK(!p.sleeping());
    p.observe(100, 90);
    p.observe(100, 90);
    CHECK(p.sleeping());
    for (int i = 0; i < wait_policy::probe_min; i++) p.observe(100, 100);
    CHECK(p.probing());
    p.observe(2, 0);  // the probe's step said nothing: it probes again
    CHECK(p.probing() && p.next_spin() == SPIN);
    p.observe(100, 1);
    CHECK(!p.sleeping() && !p.probing());
}

static void test_names_round_trip() {
    for (wait_mode m : { wait_mode::auto_, wait_mode::spin, wait_mode::sleep, wait_mode::upstream }) {
        wait_mode back = wait_mode::spin;
        CHECK(wait_mode_parse(wait_mode_name(m), back) && back == m);
    }
    wait_mode x = wait_mode::auto_;
    CHECK(!wait_mode_parse("passive", x) && x == wait_mode::auto_);
}

int main() {
    test_fixed_modes_never_change();
    test_poll_follows_the_barrier_choice();
    test_poll_stops_while_the_gaps_between_decodes_are_long();
    test_auto_keeps_spinning_while_waits_end_within_the_spin();
    test_a_single_lost_step_keeps_spinning();
    test_auto_sleeps_when_most_waits_outlast_the_spin_then_probes_with_backoff();
    test_a_won_probe_returns_to_spinning_and_resets_the_backoff();
    test_steps_with_few_waits_say_nothing();
    test_names_round_trip();
    return check_report("wait_policy");
}
