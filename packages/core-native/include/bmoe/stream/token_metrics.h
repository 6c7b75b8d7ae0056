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

}  // namespace bmoe
