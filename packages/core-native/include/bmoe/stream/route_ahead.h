#pragma once
// Route-ahead's mechanism: reads a layer's router out of its routing node's graph, and applies
// another layer's router to this layer's hidden state (one token) with ggml-cpu's own dot
// products, so the next MoE layer's experts can be read while this layer computes.
#include "bmoe/stream/route_select.h"

#include "ggml.h"

#include <cstdint>
#include <vector>

namespace bmoe {

struct layer_router {
    const ggml_tensor * weight   = nullptr; // blk.L.ffn_gate_inp.weight [n_embd, n_expert]
    const ggml_tensor * bias     = nullptr; // router bias (gpt-oss), F32, or null
    const ggml_tensor * sel_bias = nullptr; // selection bias added after gating (exp_probs_b), F32, or null
    route_gating        gating   = route_gating::softmax;
};

// From a computed routing node (ffn_moe_topk-L): layer L's router and the hidden state it routed
// (the router matmul's input). False when the graph is not shaped as llama.cpp's build_moe_ffn
// builds it (a LoRA'd router, a precomputed routing): route-ahead then skips that layer.
bool router_of(const ggml_tensor * topk, layer_router * r, const ggml_tensor ** hidden);

// The `k` experts `r` would route the hidden state's first token to. Empty when the shapes or
// types do not fit (then nothing is read ahead). `scratch` is reused between calls.
std::vector<int32_t> router_predict(const layer_router & r, const ggml_tensor * hidden, int32_t k, std::vector<uint8_t> & scratch);

}  // namespace bmoe
