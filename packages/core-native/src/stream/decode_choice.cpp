#include "bmoe/stream/decode_choice.h"

#include <algorithm>

namespace bmoe {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::vector<bool> values(mode_setting s) {
    if (s == mode_setting::off) return { false };
    if (s == mode_setting::on) return { true };
    return { false, true };
}

}  // namespace

decode_choice::decode_choice(mode_setting overlap, mode_setting ahead, int32_t per_arm, int32_t every)
    : probe_per_arm(std::max<int32_t>(1, per_arm)), reprobe_every(std::max<int32_t>(1, every)) {
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
}

decode_mode decode_choice::next() {
    if (!probing_now) return choice;
    // Round robin: every arm sees the same drift of the disk and the cache's warm-up.
    return arm_list[turn].mode;
}

void decode_choice::record(decode_mode m, bool one_token, double wall_ms) {
    if (arm_list.size() < 2 || !one_token) return;
    if (!probing_now) {
        if (++since_probe >= reprobe_every) {
            probing_now = true;
            since_probe = 0;
            turn        = 0;
            for (auto & a : arm_list) a.samples.clear();
        }
        return;
    }
    if (!(m == arm_list[turn].mode)) return; // not the decode next() handed out
    arm_list[turn].samples.push_back(wall_ms);
    turn = (turn + 1) % arm_list.size();
    for (const auto & a : arm_list) {
        if ((int32_t) a.samples.size() < probe_per_arm) return;
    }
    size_t best = 0;
    for (size_t i = 0; i < arm_list.size(); i++) {
        arm_list[i].median_ms = median(arm_list[i].samples);
        if (arm_list[i].median_ms < arm_list[best].median_ms) best = i; // strict: a tie keeps the simpler arm
    }
    choice      = arm_list[best].mode;
    probing_now = false;
}

}  // namespace bmoe
