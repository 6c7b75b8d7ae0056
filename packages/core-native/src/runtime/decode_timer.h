#pragma once
// Measures one decode (a step's llama_decode, or an image's decodes): wall time, process
// counters, and the observer's stream counters. Internal to the generator's files.
#include "bmoe/stream/decode_observer.h"
#include "bmoe/sys/proc_stats.h"

#include <algorithm>
#include <atomic>

namespace bmoe {

// Measures one llama_decode: wall time, process counters, and the observer's stream counters.
struct decode_timer {
    decode_observer * obs;
    proc_stats        p0;
    double            t0;

    decode_timer(decode_observer * o, std::atomic<bool> * abort) : obs(o), p0(proc_stats_now()), t0(now_ms()) {
        if (obs) obs->begin_decode(abort);
    }

    token_metrics finish() {
        token_metrics m;
        m.wall_ms = now_ms() - t0;
        const proc_stats p1 = proc_stats_now();
        m.cpu_ms       = p1.cpu_ms - p0.cpu_ms;
        m.major_faults = p1.major_faults - p0.major_faults;
        m.minor_faults = p1.minor_faults - p0.minor_faults;
        if (obs) {
            obs->end_decode(m);
        }
        if (m.compute_ms == 0) {
            m.compute_ms = std::max(0.0, m.wall_ms - m.io_ms - m.mgmt_ms - m.stall_ms);
        }
        m.rss_bytes = proc_rss_bytes();
        return m;
    }
};

}  // namespace bmoe
