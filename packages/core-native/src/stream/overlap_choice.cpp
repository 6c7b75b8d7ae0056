#include "bmoe/stream/overlap_choice.h"

#include <algorithm>

namespace bmoe {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

overlap_choice::overlap_choice(overlap_mode m, int32_t per_arm, int32_t every)
    : mode(m), probe_per_arm(std::max<int32_t>(1, per_arm)), reprobe_every(std::max<int32_t>(1, every)) {
    probing_now = mode == overlap_mode::automatic;
    choice      = mode == overlap_mode::on;
}

bool overlap_choice::next() {
    if (mode != overlap_mode::automatic) return pending = mode == overlap_mode::on;
    if (!probing_now) return pending = choice;
    // Interleaved, serial first: both arms see the same drift of the disk and the cache's warm-up.
    pending = overlapped.size() < serial.size();
    return pending;
}

void overlap_choice::record(bool was_overlapped, bool one_token, double wall_ms) {
    if (mode != overlap_mode::automatic || !one_token) return;
    if (!probing_now) {
        if (++since_probe >= reprobe_every) {
            probing_now = true;
            since_probe = 0;
            serial.clear();
            overlapped.clear();
        }
        return;
    }
    (was_overlapped ? overlapped : serial).push_back(wall_ms);
    if ((int32_t) serial.size() >= probe_per_arm && (int32_t) overlapped.size() >= probe_per_arm) {
        last_serial_ms  = median(serial);
        last_overlap_ms = median(overlapped);
        // Overlap only when measured faster: a tie stays serial (never slower than serial).
        choice      = last_overlap_ms < last_serial_ms;
        probing_now = false;
    }
}

}  // namespace bmoe
