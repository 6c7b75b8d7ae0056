// Patch 0009: a q6_K matrix against several columns (a batch's tokens through an output head, a
// Q4_K_M model's attn_v; the tokens routed to one q6_K expert in MUL_MAT_ID) takes the multi-column
// dot product, which must give every column the bits upstream's one-column kernel gives it alone —
// else a token's logits would depend on what else its batch holds. Checked on ggml's CPU backend
// over random weights (3 seeds), shapes whose rows end inside a 16-row block, column counts that
// leave 1..3 columns over, 1 and 2 threads, and with batch-invariant rows (patch 0008) on. A
// one-column product (one token) takes upstream's kernel, so it is the reference.
#include "check.h"
#include "cpu_graph.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct product {
    int64_t k, n;  // k: the dot products' length (a multiple of 256), n: the matrix's rows
};

// y = W x for `cols` columns of x, computed by the CPU backend in one graph.
std::vector<float> mul_mat(const std::vector<uint8_t> & w, const product & p, const float * x, int cols, int threads, bool invariant) {
    ggml_context * ctx = cpu_graph_context();
    ggml_tensor * wt = ggml_new_tensor_2d(ctx, GGML_TYPE_Q6_K, p.k, p.n);
    ggml_tensor * xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, p.k, cols);
    std::vector<float> out;
    bool ok = false;
    cpu_compute(ctx, ggml_mul_mat(ctx, wt, xt), { { wt, w.data() }, { xt, x } }, threads, invariant, 0, out, ok);
    CHECK(ok);
    return out;
}

// MUL_MAT_ID: `tokens` tokens, each routed to `used` of `experts` q6_K experts (ids: used × tokens),
// their activations one per (slot, token); out: n × used × tokens.
std::vector<float> mul_mat_id(const std::vector<uint8_t> & w, const product & p, int experts, int used, const float * x, const int32_t * ids, int tokens,
                              int threads, bool invariant) {
    ggml_context * ctx = cpu_graph_context();
    ggml_tensor * wt = ggml_new_tensor_3d(ctx, GGML_TYPE_Q6_K, p.k, p.n, experts);
    ggml_tensor * xt = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, p.k, used, tokens);
    ggml_tensor * it = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, used, tokens);
    std::vector<float> out;
    bool ok = false;
    cpu_compute(ctx, ggml_mul_mat_id(ctx, wt, xt, it), { { wt, w.data() }, { xt, x }, { it, ids } }, threads, invariant, 0, out, ok);
    CHECK(ok);
    return out;
}

// Every token of a routed batch against that token alone.
void check_routed(std::mt19937 & rng, const product & p) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int experts = 6, used = 3, max_tokens = 17;
    std::vector<float> wf((size_t) (p.k * p.n * experts));
    for (float & v : wf) v = normal(rng);
    std::vector<uint8_t> w(ggml_row_size(GGML_TYPE_Q6_K, p.k) * (size_t) (p.n * experts));
    ggml_quantize_chunk(GGML_TYPE_Q6_K, wf.data(), w.data(), 0, p.n * experts, p.k, nullptr);
    std::vector<float> x((size_t) (p.k * used * max_tokens));
    for (float & v : x) v = normal(rng) * 4.0f;
    // Each token picks `used` distinct experts; with 6 experts and 3 slots most experts get several tokens.
    std::vector<int32_t> ids((size_t) (used * max_tokens));
    for (int t = 0; t < max_tokens; t++) {
        std::vector<int32_t> all{ 0, 1, 2, 3, 4, 5 };
        std::shuffle(all.begin(), all.end(), rng);
        for (int u = 0; u < used; u++) ids[(size_t) (t * used + u)] = all[(size_t) u];
    }
    const size_t per_token = (size_t) (p.n * used);
    std::vector<std::vector<float>> alone;
    for (int t = 0; t < max_tokens; t++) {
        alone.push_back(mul_mat_id(w, p, experts, used, x.data() + p.k * used * t, ids.data() + used * t, 1, 1, false));
    }
    for (int tokens : { 2, 5, 9, 17 }) {
        for (int threads : { 1, 2 }) {
            for (bool invariant : { false, true }) {
                const std::vector<float> y = mul_mat_id(w, p, experts, used, x.data(), ids.data(), tokens, threads, invariant);
                for (int t = 0; t < tokens; t++) {
                    const bool same = std::memcmp(y.data() + per_token * (size_t) t, alone[(size_t) t].data(), sizeof(float) * per_token) == 0;
                    CHECK(same);
                    if (!same) {
                        std::fprintf(stderr, "MUL_MAT_ID, k %lld, n %lld: token %d of %d (%d threads, invariant %d) differs from the token alone\n",
                                     (long long) p.k, (long long) p.n, t, tokens, threads, (int) invariant);
                    }
                }
            }
        }
    }
}

}  // namespace

int main() {
    ggml_cpu_init();
    const product shapes[] = { { 256, 37 }, { 2048, 300 } };
    const int col_counts[] = { 2, 3, 4, 5, 7, 9, 17 };
    for (uint32_t seed = 1; seed <= 3; seed++) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (const product & p : shapes) {
            std::vector<float> wf((size_t) (p.k * p.n));
            for (float & v : wf) v = normal(rng);
            std::vector<uint8_t> w(ggml_row_size(GGML_TYPE_Q6_K, p.k) * (size_t) p.n);
            ggml_quantize_chunk(GGML_TYPE_Q6_K, wf.data(), w.data(), 0, p.n, p.k, nullptr);
            const int max_cols = 17;
            std::vector<float> x((size_t) (p.k * max_cols));
            for (float & v : x) v = normal(rng) * 4.0f;
            // The reference: each column alone.
            std::vector<std::vector<float>> alone;
            for (int c = 0; c < max_cols; c++) alone.push_back(mul_mat(w, p, x.data() + p.k * c, 1, 1, false));
            check_routed(rng, p);
            for (int cols : col_counts) {
                for (int threads : { 1, 2 }) {
                    for (bool invariant : { false, true }) {
                        const std::vector<float> y = mul_mat(w, p, x.data(), cols, threads, invariant);
                        for (int c = 0; c < cols; c++) {
                            const bool same = std::memcmp(y.data() + p.n * c, alone[(size_t) c].data(), sizeof(float) * (size_t) p.n) == 0;
                            CHECK(same);
                            if (!same) {
                                std::fprintf(stderr, "seed %u, k %lld, n %lld: column %d of %d (%d threads, invariant %d) differs from the column alone\n", seed,
                                             (long long) p.k, (long long) p.n, c, cols, threads, (int) invariant);
                            }
                        }
                    }
                }
            }
        }
    }
    return check_report("q6k_columns");
}
