// Patch 0009's multi-column q6_K dot product against upstream's one column at a time, side by side:
// a q6_K matrix (default: the Qwen3 output head, 151,936 × 2,048) times 1..N columns on ggml's CPU
// backend. Each measurement runs in a child process (GGML_CPU_MULTI_COLUMN_DOT is read once, when
// ggml's CPU backend starts), the two taking turns for --rounds rounds; the best of each is printed
// with the ratio. Usage:
//   bench_q6k_columns [--rows N] [--k K] [--cols 2,4,8] [--reps R] [--rounds N] [--threads T]
#include "../test/cpp/cpu_graph.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct options {
    int64_t          rows = 151936, k = 2048;
    std::vector<int> cols{ 1, 2, 4, 8 };
    int              reps = 30, rounds = 3, threads = 2;
};

// One timing, in this process: ms per product, the mean of `reps` after a warm-up.
double time_product(const options & o, int cols) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> wf((size_t) (o.k * o.rows));
    for (float & v : wf) v = normal(rng);
    std::vector<uint8_t> w(ggml_row_size(GGML_TYPE_Q6_K, o.k) * (size_t) o.rows);
    ggml_quantize_chunk(GGML_TYPE_Q6_K, wf.data(), w.data(), 0, o.rows, o.k, nullptr);
    std::vector<float> x((size_t) (o.k * cols));
    for (float & v : x) v = normal(rng);

    ggml_context * ctx = cpu_graph_context();
    ggml_tensor * wt = ggml_new_tensor_2d(ctx, GGML_TYPE_Q6_K, o.k, o.rows);
    ggml_tensor * xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, o.k, cols);
    std::vector<float> out;
    bool ok = false;
    const double ms = cpu_compute(ctx, ggml_mul_mat(ctx, wt, xt), { { wt, w.data() }, { xt, x.data() } }, o.threads, false, o.reps, out, ok);
    if (!ok) {
        std::fprintf(stderr, "bench_q6k_columns: the graph failed to compute\n");
        std::exit(1);
    }
    return ms;
}

// The same measurement in a child process with the kernel on or off.
double time_in_child(const char * self, const options & o, int cols, bool on) {
    const std::string cmd = std::string(on ? "" : "GGML_CPU_MULTI_COLUMN_DOT=0 ") + "'" + self + "' --child --rows " + std::to_string(o.rows) +
                            " --k " + std::to_string(o.k) + " --cols " + std::to_string(cols) + " --reps " + std::to_string(o.reps) +
                            " --threads " + std::to_string(o.threads);
    FILE * p = popen(cmd.c_str(), "r");
    if (!p) {
        std::fprintf(stderr, "bench_q6k_columns: cannot run %s\n", cmd.c_str());
        std::exit(1);
    }
    double ms = -1;
    if (std::fscanf(p, "%lf", &ms) != 1) ms = -1;
    if (pclose(p) != 0 || ms < 0) {
        std::fprintf(stderr, "bench_q6k_columns: the child (%s) failed\n", cmd.c_str());
        std::exit(1);
    }
    return ms;
}

bool parse(int argc, char ** argv, options & o, bool & child) {
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (a == "--child") {
            child = true;
            continue;
        }
        if (i + 1 >= argc) return false;
        const char * v = argv[++i];
        if (a == "--rows") o.rows = std::atoll(v);
        else if (a == "--k") o.k = std::atoll(v);
        else if (a == "--reps") o.reps = std::atoi(v);
        else if (a == "--rounds") o.rounds = std::atoi(v);
        else if (a == "--threads") o.threads = std::atoi(v);
        else if (a == "--cols") {
            o.cols.clear();
            for (const char * s = v; *s;) {
                o.cols.push_back(std::atoi(s));
                const char * c = std::strchr(s, ',');
                if (!c) break;
                s = c + 1;
            }
        } else return false;
    }
    const bool cols_ok = !o.cols.empty() && std::all_of(o.cols.begin(), o.cols.end(), [](int c) { return c >= 1 && c <= 64; });
    return o.rows > 0 && o.k > 0 && o.k % 256 == 0 && o.reps > 0 && o.rounds > 0 && o.threads > 0 && cols_ok;
}

}  // namespace

int main(int argc, char ** argv) {
    options o;
    bool child = false;
    if (!parse(argc, argv, o, child)) {
        std::fprintf(stderr, "usage: bench_q6k_columns [--rows N] [--k K (a multiple of 256)] [--cols 1,2,4,8] [--reps R] [--rounds N] [--threads T]\n");
        return 2;
    }
    ggml_cpu_init();
    if (child) {
        std::printf("%.4f\n", time_product(o, o.cols[0]));
        return 0;
    }
    std::printf("q6_K %lld x %lld times C columns, %d threads, best of %d rounds x %d products, the two taking turns\n", (long long) o.rows,
                (long long) o.k, o.threads, o.rounds, o.reps);
    std::printf("| columns | one at a time (GGML_CPU_MULTI_COLUMN_DOT=0) | multi-column (patch 0009) | ratio |\n|---|---|---|---|\n");
    for (int cols : o.cols) {
        double off = 1e300, on = 1e300;
        for (int r = 0; r < o.rounds; r++) {
            off = std::min(off, time_in_child(argv[0], o, cols, false));
            on  = std::min(on, time_in_child(argv[0], o, cols, true));
        }
        std::printf("| %d | %.2f ms | %.2f ms | %.2f |\n", cols, off, on, off / on);
        std::fflush(stdout);
    }
    return 0;
}
