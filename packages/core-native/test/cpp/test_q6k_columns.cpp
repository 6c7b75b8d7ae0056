// Patch 0009: a q6_K matrix against several columns (a batch's tokens through an output head, a
// Q4_K_M model's attn_v) takes the multi-column dot product, which must give every column the bits
// upstream's one-column kernel gives it alone — else a token's logits would depend on what else its
// batch holds. Checked on ggml's CPU backend over random weights (3 seeds), shapes whose rows end
// inside a 16-row block, column counts that leave 1..3 columns over, 1 and 2 threads, and with
// batch-invariant rows (patch 0008) on. A one-column product takes upstream's kernel, so it is the
// reference.
#include "check.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

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
    ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * wt = ggml_new_tensor_2d(ctx, GGML_TYPE_Q6_K, p.k, p.n);
    ggml_tensor * xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, p.k, cols);
    ggml_tensor * y  = ggml_mul_mat(ctx, wt, xt);
    ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, threads);
    ggml_backend_cpu_set_batch_invariant(be, invariant);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    ggml_backend_tensor_set(wt, w.data(), 0, w.size());
    ggml_backend_tensor_set(xt, x, 0, sizeof(float) * (size_t) (p.k * cols));
    CHECK(ggml_backend_graph_compute(be, gf) == GGML_STATUS_SUCCESS);
    std::vector<float> out((size_t) (p.n * cols));
    ggml_backend_tensor_get(y, out.data(), 0, sizeof(float) * out.size());
    ggml_backend_buffer_free(buf);
    ggml_backend_free(be);
    ggml_free(ctx);
    return out;
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
