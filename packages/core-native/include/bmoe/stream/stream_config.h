#pragma once
// Streaming options (one name per thing, as the CLI flags and the engine's StreamOptions) and
// their validation. Pure: unit-tested without a model.
#include "bmoe/stream/decode_choice.h"

#include <cstdint>
#include <string>

namespace bmoe {

enum class dense_weights_mode { mmap, anon };

struct stream_config {
    bool               enabled        = false;  // --moe-stream
    bool               cache_auto     = false;  // --cache-mb auto
    uint64_t           cache_mb       = 0;      // --cache-mb N (0 = no cache)
    uint64_t           cache_ceil_mb  = 0;      // --cache-ceil-mb (0 = no ceiling)
    uint64_t           cache_floor_mb = 1024;   // MemAvailable left to the system by "auto"
    int32_t            io_threads     = 4;      // --io-threads (read lanes)
    mode_setting       overlap        = mode_setting::automatic;  // --overlap / --no-overlap / auto (measured)
    int32_t            prefetch       = 0;      // --prefetch N (0 = off)
    mode_setting       route_ahead    = mode_setting::automatic;  // --route-ahead / --no-route-ahead / auto (measured)
    bool               odirect        = true;   // --no-odirect turns it off
    dense_weights_mode dense_weights  = dense_weights_mode::mmap;
    bool               force_cache    = false;  // --force-cache
    bool               repack         = false;  // --repack (a model option): experts cached in llama.cpp's repacked layout
};

// "" when valid, else a one-line message naming the option.
std::string stream_config_validate(const stream_config & c);

}  // namespace bmoe
