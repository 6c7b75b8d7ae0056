#include "bmoe/runtime/generator.h"

#include <algorithm>

// A sequence's cached tokens and their KV entries: the prefix a prompt reuses (only the tokens
// evaluated as a prompt, `exact`), what a generation leaves behind, a reset, a context shift.

namespace bmoe {

void generator::reset(int32_t seq) {
    llama_memory_t mem = llama_get_memory(ctx);
    if (seq < 0) {
        llama_memory_clear(mem, true);
        for (auto & c : cached) c.clear();
        for (auto & c : cached_media) c.clear();
        exact.assign(exact.size(), 0);
        return;
    }
    llama_memory_seq_rm(mem, seq, -1, -1);
    cached[(size_t) seq].clear();
    exact[(size_t) seq] = 0;
    cached_media[(size_t) seq].clear();
}

size_t generator::keep_cached_prefix(int32_t seq, const std::vector<llama_token> & tokens, const media_prompt * media) {
    // Reuse the longest cached prefix; at least one token must be evaluated to get logits.
    std::vector<llama_token> & c = cached[(size_t) seq];
    size_t n_keep = 0;
    while (n_keep < c.size() && n_keep < tokens.size() && c[n_keep] == tokens[n_keep]) {
        n_keep++;
    }
    // At least one token is evaluated, for its logits; two where the prompt has them, so that the
    // step is a batch of several tokens (batch-invariant kernels: the cold run's bits).
    n_keep = std::min(n_keep, tokens.size() >= 2 ? tokens.size() - 2 : tokens.size() - 1);
    if (invariant_prompts) n_keep = std::min(n_keep, exact[(size_t) seq]);
    n_keep = media_cut(seq, n_keep, media);
    llama_memory_t mem = llama_get_memory(ctx);
    if (!llama_memory_seq_rm(mem, seq, pos_at(seq, n_keep), -1)) {
        llama_memory_seq_rm(mem, seq, -1, -1);
        n_keep = 0;
        cached_media[(size_t) seq].clear();
    }
    c.resize(n_keep);
    exact[(size_t) seq] = std::min(exact[(size_t) seq], n_keep);
    return n_keep;
}

void generator::drop_uncached(int32_t seq) {
    llama_memory_seq_rm(llama_get_memory(ctx), seq, pos_at(seq, cached[(size_t) seq].size()), -1);
}

void generator::drop_inexact(int32_t seq) {
    // What a generation decoded one token at a time is never reused (see `exact`): once it ends,
    // the sequence holds, reports and saves only its exact prefix.
    if (!invariant_prompts) return;
    std::vector<llama_token> & c = cached[(size_t) seq];
    if (exact[(size_t) seq] >= c.size()) return;
    const size_t n = media_cut(seq, exact[(size_t) seq], nullptr);
    llama_memory_seq_rm(llama_get_memory(ctx), seq, pos_at(seq, n), -1);
    c.resize(n);
    exact[(size_t) seq] = n;
}

bool generator::shift_context(int32_t seq) {
    llama_memory_t mem = llama_get_memory(ctx);
    std::vector<llama_token> & c = cached[(size_t) seq];
    // Shifting cells would cut through images' positions: a sequence holding one stops instead.
    if (!llama_memory_can_shift(mem) || c.size() < 4 || !cached_media[(size_t) seq].empty()) return false;
    const int32_t n_keep    = 1;  // the first token (BOS where the model has one)
    const int32_t n_past    = (int32_t) c.size();
    const int32_t n_discard = (n_past - n_keep) / 2;
    if (!llama_memory_seq_rm(mem, seq, n_keep, n_keep + n_discard)) return false;
    llama_memory_seq_add(mem, seq, n_keep + n_discard, n_past, -n_discard);
    c.erase(c.begin() + n_keep, c.begin() + n_keep + n_discard);
    // Shifted entries are not what a cold evaluation at their new positions computes.
    exact[(size_t) seq] = std::min(exact[(size_t) seq], (size_t) n_keep);
    return true;
}

}  // namespace bmoe
