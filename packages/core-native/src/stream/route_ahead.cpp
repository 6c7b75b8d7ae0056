#include "bmoe/stream/route_ahead.h"

#include "ggml-cpu.h"

#include <cstring>

namespace bmoe {

namespace {

bool named(const ggml_tensor * t, const char * prefix) {
    return std::strncmp(t->name, prefix, std::strlen(prefix)) == 0;
}

bool is_f32_vector(const ggml_tensor * t, int64_t n) {
    return t && t->op == GGML_OP_NONE && t->type == GGML_TYPE_F32 && t->data && ggml_nelements(t) == n;
}

// The nodes between the router matmul and the top-k, found by name (build_moe_ffn names them).
// The search stops at the router matmul and at leaves, and visits at most `budget` nodes: the
// nodes it looks for are a few steps above the top-k, and the graph below them is the whole model.
struct router_nodes {
    const ggml_tensor * logits = nullptr, * biased = nullptr, * probs = nullptr, * probs_biased = nullptr;
    int budget = 256;
};

void walk(const ggml_tensor * t, router_nodes & n) {
    if (!t || t->op == GGML_OP_NONE || --n.budget < 0) return;
    if (t->op == GGML_OP_MUL_MAT && named(t, "ffn_moe_logits-")) {
        n.logits = t;
        return;
    }
    if (!n.biased && t->op == GGML_OP_ADD && named(t, "ffn_moe_logits_biased-")) n.biased = t;
    if (!n.probs && named(t, "ffn_moe_probs-")) n.probs = t;
    if (!n.probs_biased && t->op == GGML_OP_ADD && named(t, "ffn_moe_probs_biased-")) n.probs_biased = t;
    for (const ggml_tensor * s : t->src) {
        if (n.logits) return;
        walk(s, n);
    }
}

}  // namespace

bool router_of(const ggml_tensor * topk, layer_router * r, const ggml_tensor ** hidden) {
    router_nodes n;
    walk(topk, n);
    const ggml_tensor * logits = n.logits, * biased = n.biased, * probs = n.probs, * probs_biased = n.probs_biased;
    if (!logits) return false;
    const ggml_tensor * w = logits->src[0];
    const ggml_tensor * x = logits->src[1];
    if (!w || !x || w->op != GGML_OP_NONE || !w->data || x->type != GGML_TYPE_F32 || x->ne[0] != w->ne[0] || x->nb[0] != sizeof(float)) {
        return false;
    }
    layer_router out;
    out.weight = w;
    const int64_t n_expert = w->ne[1];
    if (biased) out.bias = is_f32_vector(biased->src[1], n_expert) ? biased->src[1] : nullptr;
    if (probs_biased) out.sel_bias = is_f32_vector(probs_biased->src[1], n_expert) ? probs_biased->src[1] : nullptr;
    if (probs) {
        out.gating = probs->op == GGML_OP_SOFT_MAX                                              ? route_gating::softmax
                   : probs->op == GGML_OP_UNARY && ggml_get_unary_op(probs) == GGML_UNARY_OP_SIGMOID ? route_gating::sigmoid
                                                                                                : route_gating::other;
    }
    *r      = out;
    *hidden = x;
    return true;
}

std::vector<int32_t> router_predict(const layer_router & r, const ggml_tensor * hidden, int32_t k, std::vector<uint8_t> & scratch) {
    const ggml_tensor * w = r.weight;
    if (!w || !hidden || hidden->ne[0] != w->ne[0]) return {};
    const int64_t n_embd = w->ne[0], n_expert = w->ne[1];
    const ggml_type_traits_cpu * wt = ggml_get_type_traits_cpu(w->type);
    if (!wt || !wt->vec_dot) return {};
    // The hidden state in the router's dot-product type, as ggml-cpu's mul_mat converts it.
    const ggml_type vdt = wt->vec_dot_type;
    const float * x = (const float *) hidden->data;
    const void * xq = x;
    if (vdt != GGML_TYPE_F32) {
        const ggml_type_traits_cpu * qt = ggml_get_type_traits_cpu(vdt);
        if (!qt || !qt->from_float || n_embd % ggml_blck_size(vdt) != 0) return {};
        scratch.resize(ggml_row_size(vdt, n_embd));
        qt->from_float(x, scratch.data(), n_embd);
        xq = scratch.data();
    }
    std::vector<float> logits((size_t) n_expert);
    for (int64_t e = 0; e < n_expert; e++) {
        wt->vec_dot((int) n_embd, &logits[(size_t) e], 0, (const char *) w->data + e * w->nb[1], 0, xq, 0, 1);
    }
    if (r.bias) {
        const float * b = (const float *) r.bias->data;
        for (int64_t e = 0; e < n_expert; e++) logits[(size_t) e] += b[e];
    }
    std::vector<float> sel;
    if (r.sel_bias) sel.assign((const float *) r.sel_bias->data, (const float *) r.sel_bias->data + n_expert);
    return route_select(logits, sel, r.gating, k);
}

}  // namespace bmoe
