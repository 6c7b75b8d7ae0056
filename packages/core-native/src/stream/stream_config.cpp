#include "bmoe/stream/stream_config.h"

#include "bmoe/contract/params.h"

namespace bmoe {

// The direct C++ API's check (the addon's readers check the same ranges field by field).
static std::string out_of_range(const char * flag, const contract::int_field & f, int64_t v) {
    if (v >= f.min && v <= f.max) return "";
    return std::string(flag) + " must be between " + std::to_string(f.min) + " and " + std::to_string(f.max) + ", got " + std::to_string(v);
}

std::string stream_config_validate(const stream_config & c) {
    if (!c.enabled) {
        return "";
    }
    std::string err = out_of_range("io-threads", contract::stream::io_threads, c.io_threads);
    if (err.empty()) err = out_of_range("prefetch", contract::stream::prefetch, c.prefetch);
    if (err.empty() && !c.cache_auto && c.cache_mb > (uint64_t) contract::stream::cache_mb.max) {
        err = "cache-mb " + std::to_string(c.cache_mb) + " is larger than " + std::to_string(contract::stream::cache_mb.max) + " MiB";
    }
    return err;
}

}  // namespace bmoe
