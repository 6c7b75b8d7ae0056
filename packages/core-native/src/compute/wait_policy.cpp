#include "bmoe/compute/wait_policy.h"

#include <algorithm>
#include <limits>

namespace bmoe {

bool wait_mode_parse(const std::string & s, wait_mode & out) {
    if (s == "auto") out = wait_mode::auto_;
    else if (s == "spin") out = wait_mode::spin;
    else if (s == "sleep") out = wait_mode::sleep;
    else if (s == "upstream") out = wait_mode::upstream;
    else return false;
    return true;
}

const char * wait_mode_name(wait_mode m) {
    switch (m) {
        case wait_mode::auto_: return "auto";
        case wait_mode::spin: return "spin";
        case wait_mode::sleep: return "sleep";
        case wait_mode::upstream: return "upstream";
    }
    return "auto";
}

int64_t wait_policy::next_spin() const {
    switch (mode) {
        case wait_mode::upstream: return -1;
        case wait_mode::spin: return std::numeric_limits<int64_t>::max();
        case wait_mode::sleep: return 0;
        case wait_mode::auto_: break;
    }
    return sleeping_ && !probing_ ? 0 : spin_ns;
}

int32_t wait_policy::next_poll() const {
    switch (mode) {
        case wait_mode::upstream: return -1;
        case wait_mode::spin: return 50;  // ggml's default level
        case wait_mode::sleep: return 0;
        case wait_mode::auto_: break;
    }
    if (sleeping_ && !probing_) return 0;
    return gap_ms_ <= poll_gap_max_ms ? 1 : 0;
}

void wait_policy::observe_gap(double ms) {
    // Longer than a decode loop's gap: the generator was idle or a request started; not a rhythm.
    if (ms > idle_gap_ms) return;
    // A short memory: one long gap (a prompt joining) does not switch polling off for long.
    gap_ms_ = gap_ms_ < 0 ? ms : 0.5 * gap_ms_ + 0.5 * ms;
}

void wait_policy::observe(uint64_t waits, uint64_t slept) {
    if (mode != wait_mode::auto_) return;
    const bool known = waits >= min_waits;
    // Lost: most waits outlasted the spin, so spinning only burnt the core before sleeping anyway.
    const bool lost = known && slept * 2 > waits;
    if (!sleeping_) {
        // One lost step is not a neighbour: the event loop taking a core for a token's work, or a
        // collection, costs one step; a busy process costs every step.
        lost_run_ = lost ? lost_run_ + 1 : known ? 0 : lost_run_;
        if (lost_run_ >= lost_steps_to_sleep) {
            sleeping_    = true;
            lost_run_    = 0;
            probe_every_ = probe_min;
            until_probe_ = probe_every_;
        }
        return;
    }
    if (probing_) {
        if (!known) return;  // the probe goes on until a step says something
        probing_ = false;
        if (!lost) {
            sleeping_ = false;
            return;
        }
        probe_every_ = std::min(probe_every_ * 2, probe_max);
        until_probe_ = probe_every_;
        return;
    }
    if (--until_probe_ <= 0) probing_ = true;
}

}  // namespace bmoe
