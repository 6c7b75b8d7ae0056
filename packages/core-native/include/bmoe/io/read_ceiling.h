#pragma once
// The device's own read ceiling, measured the way the streamer reads: page-aligned random slices
// of the model file with O_DIRECT, `lanes` threads each with its own descriptor. The bench runs
// it in the same session as the streaming rows, because a virtual disk's speed drifts.
#include <cstdint>
#include <string>

namespace bmoe {

struct read_ceiling_result {
    uint64_t bytes   = 0;
    double   seconds = 0;
    bool     odirect = true;
};

// Throws std::runtime_error naming the file on failure.
read_ceiling_result measure_read_ceiling(const std::string & path, int32_t lanes, uint64_t block_bytes, uint64_t total_bytes,
                                         uint64_t range_lo, uint64_t range_hi, bool odirect);

}  // namespace bmoe
