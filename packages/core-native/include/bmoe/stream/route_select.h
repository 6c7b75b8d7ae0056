#pragma once
// Route-ahead's selection rule (pure): which experts a router's scores pick, as llama.cpp's
// build_moe_ffn picks them. Used to predict the next MoE layer's routing from this layer's hidden
// state; the real routing still decides what is computed, so a wrong pick costs a read, never a
// different token.
#include <cstdint>
#include <vector>

namespace bmoe {

enum class route_gating { softmax, sigmoid, other };

// The `k` experts with the highest selection score, in descending score order (ties: lower id).
// `logits` are the router's outputs (router bias already added); `selection_bias` (may be empty)
// is added after the gating function, as DeepSeek V3-style routers do (sigmoid(logit) + bias).
// Without a selection bias the gating function is monotonic and the logits order decides.
std::vector<int32_t> route_select(const std::vector<float> & logits, const std::vector<float> & selection_bias,
                                  route_gating gating, int32_t k);

}  // namespace bmoe
