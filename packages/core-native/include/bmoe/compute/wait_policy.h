#pragma once
// How the compute threads wait at ggml's barriers between ops (patch 0006's
// ggml_cpu_set_barrier_spin), decided before every decode step from what the barriers saw in the
// previous ones. Pure: the generator feeds it ggml_cpu_barrier_counts and applies next_spin().
//
// Why: a decode passes a barrier after every op, hundreds per token. Sleeping at each one (the
// OpenMP build under OMP_WAIT_POLICY=passive) pays a wake-up per op and cost 11–16 % of a resident
// token on an idle machine; spinning (active, or ggml's own pool) wastes the core when the thread
// being waited for is not running: beside a busy process, or while a read thread of ours needs
// the core (a streamed token waits for reads inside mul_mat_id). Auto spins a bounded time — long
// enough for an op's imbalance, short next to a scheduler's time slice — and when more than half
// of the waits of two steps in a row outlast the spin (the waits are being lost to someone else),
// it sleeps at once instead, probing the spin again after 8, 16, … 128 steps. The same state decides how ggml's own
// pool waits between graphs: polling (level 1, a few ms) while spinning pays, sleeping at once
// otherwise; an OpenMP build's threads wait there as OMP_WAIT_POLICY says. Polling also needs the
// gap between two decodes (the generator sampling, the JS thread taking the token) to be short: a
// long one (four sequences sampled in a step of `bmoe serve`) would keep a core spinning that the
// sampling and the event loop need, so past poll_gap_max_ms the pool sleeps between decodes.
#include <cstdint>
#include <string>

namespace bmoe {

enum class wait_mode {
    auto_,     // bounded spin while it pays, sleep when the waits outlast it (the default)
    spin,      // spin until the barrier passes (OMP_WAIT_POLICY=active's barrier)
    sleep,     // sleep at once (OMP_WAIT_POLICY=passive's barrier)
    upstream,  // ggml's own: OpenMP's barrier under OMP_WAIT_POLICY, or the pool's pure spin
};

// "auto" | "spin" | "sleep" | "upstream"; false for anything else.
bool wait_mode_parse(const std::string & s, wait_mode & out);
const char * wait_mode_name(wait_mode m);

struct wait_policy {
    static constexpr int64_t default_spin_ns = 50'000;
    static constexpr int32_t probe_min       = 8;
    static constexpr int32_t probe_max       = 128;
    // Fewer waits than this in a step say nothing (a one-thread step, a tiny graph).
    static constexpr uint64_t min_waits      = 8;
    // Consecutive lost steps before auto sleeps (a single one is a passing disturbance).
    static constexpr int32_t lost_steps_to_sleep = 2;

    wait_mode mode    = wait_mode::auto_;
    int64_t   spin_ns = default_spin_ns;

    // The barrier spin for the next step: < 0 upstream's, 0 sleep at once, else nanoseconds.
    int64_t next_spin() const;
    // The pool's poll level between graphs for the next step (ggml's 0 … 100; -1 leave it): auto
    // polls while it spins at the barriers and the gaps between decodes are short.
    int32_t next_poll() const;
    // What the step's barriers saw: how many waits, how many outlasted the spin and slept.
    void observe(uint64_t waits, uint64_t slept);
    // The time from the end of one decode to the start of the next, ms (a moving average decides).
    void observe_gap(double ms);
    static constexpr double poll_gap_max_ms = 0.5;
    static constexpr double idle_gap_ms     = 50;  // longer gaps are idle time, not counted
    // Auto's state, for tests and the debug line.
    bool sleeping() const { return sleeping_; }
    bool probing() const { return probing_; }
    double gap_ms() const { return gap_ms_; }

  private:
    bool    sleeping_    = false;
    bool    probing_     = false;
    int32_t probe_every_ = probe_min;
    int32_t until_probe_ = 0;
    int32_t lost_run_    = 0;   // consecutive lost steps while spinning
    double  gap_ms_      = -1;  // none seen yet
};

}  // namespace bmoe
