#pragma once
// Streaming options (one name per thing, as the CLI flags and the engine's StreamOptions) and
// their validation. Pure: unit-tested without a model. Defaults and ranges are the contract's
// (include/bmoe/contract/params.h, generated from contract/params.mjs).
#include "bmoe/contract/params.h"
#include "bmoe/stream/decode_choice.h"

#include <cstdint>
#include <string>

namespace bmoe {

enum class dense_weights_mode { mmap, anon };

struct stream_config {
    bool               enabled        = false;  // --moe-stream
    bool               cache_auto     = false;  // --cache-mb auto
    uint64_t           cache_mb       = (uint64_t) contract::stream::cache_mb.def;       // --cache-mb N (0 = no cache)
    uint64_t           cache_ceil_mb  = (uint64_t) contract::stream::cache_ceil_mb.def;  // --cache-ceil-mb (0 = no ceiling)
    uint64_t           cache_floor_mb = contract::cache_floor_mb;  // MemAvailable left to the system by "auto"
    int32_t            io_threads     = (int32_t) contract::stream::io_threads.def;  // --io-threads (read lanes)
    mode_setting       overlap        = mode_setting::automatic;  // --overlap / --no-overlap / auto (measured)
    int32_t            prefetch       = (int32_t) contract::stream::prefetch.def;    // --prefetch N (0 = off)
    mode_setting       route_ahead    = mode_setting::automatic;  // --route-ahead / --no-route-ahead / auto (measured)
    bool               odirect        = contract::stream::odirect.def;      // --no-odirect turns it off
    dense_weights_mode dense_weights  = dense_weights_mode::mmap;
    bool               force_cache    = contract::stream::force_cache.def;  // --force-cache
    bool               repack         = contract::model::repack.def;        // --repack (a model option): experts cached in llama.cpp's repacked layout
    bool               huge_pages     = contract::model::huge_pages.def;    // --no-huge-pages (a model option): the cache's slots in 2 MiB pages (vm/slot_pool)
};

// "" when valid, else a one-line message naming the option.
std::string stream_config_validate(const stream_config & c);

}  // namespace bmoe
