#include "bmoe/stream/stream_config.h"

namespace bmoe {

std::string stream_config_validate(const stream_config & c) {
    if (!c.enabled) {
        return "";
    }
    if (c.io_threads < 1 || c.io_threads > 64) {
        return "io-threads must be between 1 and 64, got " + std::to_string(c.io_threads);
    }
    if (c.prefetch < 0 || c.prefetch > 64) {
        return "prefetch must be between 0 and 64, got " + std::to_string(c.prefetch);
    }
    if (!c.cache_auto && c.cache_mb > (1ull << 24)) {
        return "cache-mb " + std::to_string(c.cache_mb) + " is larger than 16 TiB";
    }
    return "";
}

}  // namespace bmoe
