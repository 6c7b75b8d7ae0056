#pragma once
// One token's counters. The C++ side of the metrics schema is the two lists below, in the order
// and under the names of COLUMNS (packages/engine/src/metrics/fields.ts, where the descriptions
// and units live): X(C++ type, snake_case column, camelCase JS key). The struct here and the JS
// record built in addon/js_objects.h both expand them, and packages/engine/test/
// metrics-native.test.ts reads this file and fails when it and COLUMNS disagree (order, names,
// integer vs floating point). Adding a metric: one row in COLUMNS, one X line here, and the code
// that measures it. mem_available_bytes is read in JS after the token, so it is not listed here.
// One X per line, no comments inside the lists (a `//` would swallow the line continuation).
#include <cstdint>

namespace bmoe {

// Which token: from the generator's token_event (index, token), not measured.
#define BMOE_TOKEN_ID_FIELDS(X)          \
    X(int32_t,  token_index, tokenIndex) \
    X(int32_t,  token_id,    tokenId)

// Measured around one llama_decode: the generator fills wall, CPU, faults and RSS; the expert
// streamer the I/O, cache and prefetch fields (resident runs leave those 0).
#define BMOE_TOKEN_METRICS(X)                             \
    X(double,   wall_ms,              wallMs)             \
    X(double,   compute_ms,           computeMs)          \
    X(double,   io_ms,                ioMs)               \
    X(double,   stall_ms,             stallMs)            \
    X(double,   mgmt_ms,              mgmtMs)             \
    X(uint64_t, read_bytes,           readBytes)          \
    X(uint64_t, expert_hits,          expertHits)         \
    X(uint64_t, expert_misses,        expertMisses)       \
    X(uint64_t, cache_resident_bytes, cacheResidentBytes) \
    X(uint64_t, prefetch_issued,      prefetchIssued)     \
    X(uint64_t, prefetch_useful,      prefetchUseful)     \
    X(uint64_t, ahead_routed,         aheadRouted)        \
    X(uint64_t, ahead_correct,        aheadCorrect)       \
    X(uint64_t, ahead_read,           aheadRead)          \
    X(uint64_t, ahead_wasted_bytes,   aheadWastedBytes)   \
    X(uint64_t, overlapped,           overlapped)         \
    X(uint64_t, ahead_on,             aheadOn)            \
    X(uint64_t, major_faults,         majorFaults)        \
    X(uint64_t, minor_faults,         minorFaults)        \
    X(double,   cpu_ms,               cpuMs)              \
    X(uint64_t, rss_bytes,            rssBytes)

struct token_metrics {
#define BMOE_TOKEN_METRIC_MEMBER(type, snake, camel) type snake = 0;
    BMOE_TOKEN_METRICS(BMOE_TOKEN_METRIC_MEMBER)
#undef BMOE_TOKEN_METRIC_MEMBER
};

}  // namespace bmoe
