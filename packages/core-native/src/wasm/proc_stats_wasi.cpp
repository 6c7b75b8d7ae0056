// wasm32-wasi stand-in for src/sys/proc_stats.cpp: WASI has a monotonic clock and a process CPU
// clock, but no page-fault counters and no resident-set figures (its memory is the wasm heap).
#include "bmoe/sys/proc_stats.h"

#include <ctime>

namespace bmoe {

static double clock_ms(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

proc_stats proc_stats_now() {
    proc_stats p;
    p.cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    return p;
}
uint64_t proc_rss_bytes() { return 0; }
uint64_t proc_peak_rss_bytes() { return 0; }
double now_ms() { return clock_ms(CLOCK_MONOTONIC); }

}  // namespace bmoe
