#pragma once
// Process counters sampled around each decode: CPU time, page faults, resident set.
#include <cstdint>

namespace bmoe {

struct proc_stats {
    double   cpu_ms       = 0; // user + system, whole process
    uint64_t major_faults = 0;
    uint64_t minor_faults = 0;
};

proc_stats proc_stats_now();
// Resident set size from /proc/self/statm; 0 where unreadable.
uint64_t proc_rss_bytes();
// Peak resident set (ru_maxrss), bytes.
uint64_t proc_peak_rss_bytes();
// Monotonic clock in milliseconds.
double now_ms();

}  // namespace bmoe
