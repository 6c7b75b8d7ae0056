#include "bmoe/runtime/token_probs.h"

#include "bmoe/runtime/tokenize.h"

#include <algorithm>
#include <cmath>

namespace bmoe {

token_probs token_probs_at(const llama_vocab * vocab, const float * logits, int32_t n_vocab, llama_token token, int32_t n_top) {
    token_probs out;
    out.token = token;
    if (n_vocab <= 0) return out;
    // log-softmax: logit - (max + log sum exp(logit - max)); a masked (-inf) logit stays -inf.
    float max = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) max = std::max(max, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += std::exp((double) logits[i] - max);
    const float lse = max + (float) std::log(sum);
    if (token >= 0 && token < n_vocab) out.logprob = logits[token] - lse;
    const int32_t n = std::min(n_top, n_vocab);
    if (n <= 0) return out;
    auto better = [&](llama_token a, llama_token b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    std::vector<llama_token> heap;  // the n best so far, worst on top
    heap.reserve((size_t) n + 1);
    for (llama_token i = 0; i < n_vocab; i++) {
        if ((int32_t) heap.size() < n) {
            heap.push_back(i);
            std::push_heap(heap.begin(), heap.end(), better);
        } else if (better(i, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), better);
            heap.back() = i;
            std::push_heap(heap.begin(), heap.end(), better);
        }
    }
    std::sort(heap.begin(), heap.end(), better);
    for (llama_token t : heap) out.top.push_back({ t, logits[t] - lse, token_piece(vocab, t) });
    return out;
}

}  // namespace bmoe
