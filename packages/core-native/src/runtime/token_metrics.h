#pragma once
// One token's counters; field names match the metrics schema (@bmoe/engine/metrics) in snake_case.
#include <cstdint>

struct token_metrics {
    double   wall_ms              = 0; // llama_decode that produced this token's logits
    double   compute_ms           = 0; // wall - io - mgmt (serial); wall - stall (overlap)
    double   io_ms                = 0; // serial: wall time blocked on reads; overlap: summed lane busy time
    double   stall_ms             = 0; // overlap: compute time lost waiting for reads
    double   mgmt_ms              = 0; // expert cache bookkeeping, commits, evictions
    uint64_t read_bytes           = 0;
    uint64_t expert_hits          = 0;
    uint64_t expert_misses        = 0;
    uint64_t cache_resident_bytes = 0;
    uint64_t prefetch_issued      = 0;
    uint64_t prefetch_useful      = 0;
    uint64_t major_faults         = 0;
    uint64_t minor_faults         = 0;
    double   cpu_ms               = 0;
    uint64_t rss_bytes            = 0;
};
