#pragma once
// One token's counters: the members are the contract's list (include/bmoe/contract/token_metrics.h,
// generated from contract/token-metrics.mjs, where the columns' order, names, kinds and
// descriptions are written once). The struct here and the JS record built in addon/js_objects.h
// both expand it. mem_available_bytes is read in JS after the token, so it is not listed.
#include "bmoe/contract/token_metrics.h"

#include <cstdint>

namespace bmoe {

struct token_metrics {
#define BMOE_TOKEN_METRIC_MEMBER(type, snake, camel) type snake = 0;
    BMOE_TOKEN_METRICS(BMOE_TOKEN_METRIC_MEMBER)
#undef BMOE_TOKEN_METRIC_MEMBER
};

// `m` measured after `into`, folded into one record (a prompt evaluated over several decodes):
// counters and times add up; the state after the last decode (cache size, RSS, the decode mode)
// is the later one's.
inline void token_metrics_add(token_metrics & into, const token_metrics & m) {
#define BMOE_TOKEN_METRIC_ADD(type, snake, camel) into.snake += m.snake;
    BMOE_TOKEN_METRICS(BMOE_TOKEN_METRIC_ADD)
#undef BMOE_TOKEN_METRIC_ADD
    into.cache_resident_bytes = m.cache_resident_bytes;
    into.rss_bytes            = m.rss_bytes;
    into.overlapped           = m.overlapped;
    into.ahead_on             = m.ahead_on;
}

}  // namespace bmoe
