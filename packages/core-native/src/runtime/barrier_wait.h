#pragma once
// How the compute threads wait at ggml's op barriers during one decode: the wait policy's spin
// set before it, what the barriers did read after it (patch 0006; without it the build keeps
// ggml's own waiting and the policy sees nothing). Used by the generator around every decode.

#include "bmoe/compute/wait_policy.h"

#include "ggml-cpu.h"

#ifdef BMOE_HAVE_BARRIER_SPIN
#include "ggml-cpu-barrier.h"
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace bmoe {

struct barrier_counts {
    uint64_t waits = 0;
    uint64_t slept = 0;
};

// The policy's spin for this decode (and the pool's poll between graphs), and the counts before it.
inline barrier_counts barrier_begin(const wait_policy & w, ggml_threadpool * pool) {
    barrier_counts c;
#ifdef BMOE_HAVE_BARRIER_SPIN
    ggml_cpu_set_barrier_spin(w.next_spin());
    if (pool && w.next_poll() >= 0) ggml_threadpool_set_poll(pool, (uint32_t) w.next_poll());
    ggml_cpu_barrier_counts(&c.waits, &c.slept);
#else
    (void) w;
    (void) pool;
#endif
    return c;
}

// The counts after the decode, observed by the policy (BMOE_DEBUG_WAIT prints them).
inline void barrier_end(wait_policy & w, const barrier_counts & c0) {
#ifdef BMOE_HAVE_BARRIER_SPIN
    barrier_counts c;
    ggml_cpu_barrier_counts(&c.waits, &c.slept);
    const int64_t spin = w.next_spin();
    w.observe(c.waits - c0.waits, c.slept - c0.slept);
    static const bool debug = std::getenv("BMOE_DEBUG_WAIT") != nullptr;
    if (debug) {
        std::fprintf(stderr, "[wait] spin %lld ns: %llu waits, %llu slept -> %s%s, gap %.3f ms, poll %d\n", (long long) spin,
                     (unsigned long long) (c.waits - c0.waits), (unsigned long long) (c.slept - c0.slept),
                     w.sleeping() ? "sleeping" : "spinning", w.probing() ? " (probe next)" : "", w.gap_ms(), (int) w.next_poll());
    }
#else
    (void) w;
    (void) c0;
#endif
}

}  // namespace bmoe
