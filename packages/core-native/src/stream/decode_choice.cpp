#include "bmoe/stream/decode_choice.h"

#include <algorithm>
#include <cmath>

namespace bmoe {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// The standard error of a sample's median, from its median absolute deviation (robust to the
// odd slow token): 1.4826 × MAD estimates the spread, and a median's error is ~1.253 × that / √n.
double median_error(const std::vector<double> & v, double med) {
    if (v.size() < 2) return 0.0;
    std::vector<double> dev;
    dev.reserve(v.size());
    for (double x : v) dev.push_back(x > med ? x - med : med - x);
    return 1.4826 * 1.253 * median(dev) / std::sqrt((double) v.size());
}

std::vector<bool> values(mode_setting s) {
    if (s == mode_setting::off) return { false };
    if (s == mode_setting::on) return { true };
    return { false, true };
}

}  // namespace

decode_choice::decode_choice(mode_setting overlap, mode_setting ahead, int32_t per_arm, int32_t every, int32_t max_arm)
    : probe_per_arm(std::max<int32_t>(1, per_arm)), reprobe_every(std::max<int32_t>(1, every)), max_per_arm(std::max(probe_per_arm, max_arm)) {
    for (bool a : values(ahead)) {
        for (bool o : values(overlap)) {
            arm x;
            x.mode.overlap = o;
            x.mode.ahead   = a;
            arm_list.push_back(x);
        }
    }
    choice      = arm_list.front().mode;
    probing_now = arm_list.size() > 1;
    probes_started = probing_now ? 1 : 0;
}

decode_mode decode_choice::next() {
    if (!probing_now) return choice;
    // Round robin over the live arms: each sees the same drift of the disk and the cache's warm-up.
    return arm_list[turn].mode;
}

void decode_choice::record(decode_mode m, bool one_token, double wall_ms) {
    if (arm_list.size() < 2 || !one_token) return;
    if (!probing_now) {
        const bool drift = m == choice && !drift_spent && drifted(wall_ms);
        if (++since_probe >= reprobe_every || drift) {
            drift_started += drift;
            drift_spent = drift;
            start_probe();
        }
        return;
    }
    if (!(m == arm_list[turn].mode)) return; // not the decode next() handed out
    arm_list[turn].samples.push_back(wall_ms);
    do {
        turn = (turn + 1) % arm_list.size();
    } while (!arm_list[turn].live);
    // A round ends when every live arm has as many samples as the first live one.
    const size_t n = arm_list[turn].samples.size();
    for (const auto & a : arm_list) {
        if (a.live && a.samples.size() != n) return;
    }
    finish_round();
}

void decode_choice::start_probe() {
    probing_now = true;
    since_probe = 0;
    turn        = 0;
    probes_started++;
    recent.clear();
    for (auto & a : arm_list) {
        a.samples.clear();
        a.live = true;
    }
}

bool decode_choice::drifted(double wall_ms) {
    if (ref_ms <= 0) return false;
    const size_t window = std::max(drift_window, (size_t) std::ceil(drift_window_ms / ref_ms));
    if (window >= (size_t) reprobe_every) return false;  // the periodic probe comes first
    recent.push_back(wall_ms);
    if (recent.size() > window) recent.erase(recent.begin());
    if (recent.size() < window) return false;
    const double now   = median(recent);
    const double err   = median_error(recent, now);
    const double noise = 2.0 * std::sqrt(err * err + ref_err * ref_err);
    return now - ref_ms > std::max(ref_ms * (drift_ratio - 1), noise);
}

void decode_choice::finish_round() {
    size_t best = arm_list.size();
    for (size_t i = 0; i < arm_list.size(); i++) {
        arm & a = arm_list[i];
        if (!a.live) continue;
        a.median_ms = median(a.samples);
        a.error_ms  = median_error(a.samples, a.median_ms);
        a.timed     = (int32_t) a.samples.size();
        if (best == arm_list.size() || a.median_ms < arm_list[best].median_ms) best = i;
    }
    const double  lead   = arm_list[best].median_ms;
    const int32_t rounds = (int32_t) arm_list[best].samples.size();
    size_t        live   = 0;
    bool          clear  = true;
    for (size_t i = 0; i < arm_list.size(); i++) {
        arm & a = arm_list[i];
        if (!a.live || i == best) {
            live += a.live;
            continue;
        }
        // How far apart the two medians must be to tell them apart, at this noise.
        const double noise = 2.0 * std::sqrt(a.error_ms * a.error_ms + arm_list[best].error_ms * arm_list[best].error_ms);
        if (rounds >= 3 && a.median_ms - lead > std::max(lead * (drop_ratio - 1), noise)) {
            a.live = false; // clearly slower: no more of its tokens spent on it
            continue;
        }
        live++;
        clear = clear && a.median_ms - lead >= std::max(lead * (clear_ratio - 1), noise);
    }
    if (live == 1 || (rounds >= probe_per_arm && clear) || rounds >= max_per_arm) {
        finish_probe();
        return;
    }
    turn = 0;
    while (!arm_list[turn].live) turn++;
}

void decode_choice::finish_probe() {
    double lead = 0;
    bool   any  = false;
    for (const auto & a : arm_list) {
        if (a.live && (!any || a.median_ms < lead)) {
            lead = a.median_ms;
            any  = true;
        }
    }
    // The simplest live arm within a tie of the fastest (arm_list is simplest first).
    for (const auto & a : arm_list) {
        if (a.live && a.median_ms <= lead * tie_ratio) {
            choice  = a.mode;
            ref_ms  = a.median_ms;
            ref_err = a.error_ms;
            break;
        }
    }
    probing_now = false;
    recent.clear();
}

}  // namespace bmoe
