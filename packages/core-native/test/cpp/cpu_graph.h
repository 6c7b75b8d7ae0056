#pragma once
// One ggml graph computed on the CPU backend from host inputs (test_q6k_columns, bench_q6k_columns).
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <chrono>
#include <initializer_list>
#include <vector>

struct cpu_input {
    ggml_tensor * tensor;
    const void *  data;  // ggml_nbytes(tensor) bytes
};

// Allocates ctx's tensors on a CPU backend of `threads` threads (batch-invariant rows as asked),
// copies the inputs in, computes y once and then `reps` more times, and reads y into `out`.
// Returns the mean ms of the `reps` timed computations (0 when reps is 0); frees the backend and ctx.
inline double cpu_compute(ggml_context * ctx, ggml_tensor * y, std::initializer_list<cpu_input> inputs, int threads, bool invariant, int reps,
                          std::vector<float> & out, bool & ok) {
    ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, threads);
    ggml_backend_cpu_set_batch_invariant(be, invariant);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    for (const cpu_input & in : inputs) ggml_backend_tensor_set(in.tensor, in.data, 0, ggml_nbytes(in.tensor));
    ok = ggml_backend_graph_compute(be, gf) == GGML_STATUS_SUCCESS;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps && ok; i++) ok = ggml_backend_graph_compute(be, gf) == GGML_STATUS_SUCCESS;
    const double ms = reps > 0 ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps : 0.0;
    out.resize((size_t) ggml_nelements(y));
    ggml_backend_tensor_get(y, out.data(), 0, ggml_nbytes(y));
    ggml_backend_buffer_free(buf);
    ggml_backend_free(be);
    ggml_free(ctx);
    return ms;
}

// A context for a few tensors and one graph, holding no data (cpu_compute allocates it).
inline ggml_context * cpu_graph_context() {
    ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true };
    return ggml_init(ip);
}
