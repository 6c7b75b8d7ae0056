// The generator's images (runtime/media): positions past them, where a prompt's next image is,
// and evaluating one. Apart from the decode loop so a text-only reader of generator.cpp can skip it.
#include "bmoe/runtime/generator.h"

#include "decode_timer.h"

#include <algorithm>
#include <stdexcept>

namespace bmoe {

void generator::check_media(const generate_request & req) const {
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    const media_prompt * media = req.media.get();
    if (!media->spans.empty()) {
        if (!eval_media) throw std::runtime_error("this build takes no images (the wasm32-wasi addon has no multimodal library)");
        if (req.prompt_logprobs) throw std::runtime_error("promptLogprobs cannot score a prompt with images");
    }
    size_t next_span = 0;
    for (size_t i = 0; i < req.tokens.size(); i++) {
        if (next_span < media->spans.size() && media->spans[next_span].start == i) {
            const media_span & s = media->spans[next_span++];
            const size_t end = i + (size_t) s.n_tokens;
            if (end >= req.tokens.size()) throw std::runtime_error("the prompt ends with an image: text must follow it");
            for (size_t k = i; k < end; k++) {
                if (req.tokens[k] != s.id) throw std::runtime_error("the prompt's tokens do not match its images (token " + std::to_string(k) + ")");
            }
            i = end - 1;
            continue;
        }
        const llama_token t = req.tokens[i];
        if (t < 0 || t >= n_vocab) {
            throw std::runtime_error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                                     std::to_string(n_vocab - 1) + ")" + (is_media_token(t) ? " (an image's cell without its image)" : ""));
        }
    }
    if (next_span != media->spans.size()) throw std::runtime_error("the prompt's tokens do not match its images");
}

size_t generator::media_cut(int32_t seq, size_t n_keep, const media_prompt * media) {
    // An image is kept whole or not at all, the cached one and the request's.
    std::vector<media_span> & m = cached_media[(size_t) seq];
    for (const media_span & s : m) {
        if (s.start < n_keep && n_keep < s.start + (size_t) s.n_tokens) n_keep = s.start;
    }
    if (media) {
        for (const media_span & s : media->spans) {
            if (s.start < n_keep && n_keep < s.start + (size_t) s.n_tokens) n_keep = s.start;
        }
    }
    while (!m.empty() && m.back().start >= n_keep) m.pop_back();
    return n_keep;
}

llama_pos generator::pos_at(int32_t seq, size_t index) const {
    llama_pos p = (llama_pos) index;
    for (const media_span & s : cached_media[(size_t) seq]) {
        if (s.start + (size_t) s.n_tokens <= index) p -= s.n_tokens - s.n_pos;
    }
    return p;
}

const media_span * generator::pending_media(const generation & g) const {
    if (!g.req.media) return nullptr;
    const size_t at = g.pending_base + g.pending_at;
    for (const media_span & s : g.req.media->spans) {
        if (s.start == at) return &s;
    }
    return nullptr;
}

size_t generator::text_before_media(const generation & g, size_t n) const {
    if (!g.req.media) return n;
    const size_t at = g.pending_base + g.pending_at;
    for (const media_span & s : g.req.media->spans) {
        if (s.start >= at) return std::min(n, s.start - at);
    }
    return n;
}

bool generator::step_media(generation & g, const media_span & s) {
    const int32_t seq = g.req.seq;
    std::vector<llama_token> & c = cached[(size_t) seq];
    // Its own decodes, before this step's batch; an abort of g alone stops them.
    std::vector<generation *> batch_so_far;
    batch_so_far.swap(in_batch);
    in_batch.push_back(&g);
    stop_decode.store(false);
    std::string why;
    token_metrics m;
    {
        decode_timer timer(observer, &stop_decode);
        try {
            eval_media(*g.req.media, s, pos_at(seq, c.size()), seq);
        } catch (const std::exception & e) {
            why = e.what();
        }
        m = timer.finish();
    }
    in_batch.swap(batch_so_far);
    if (observer && !observer->error().empty()) why = observer->error();
    if (why.empty() && file_check) why = file_check(false);
    if (!why.empty()) {
        if (g.abort.load()) {
            drop_uncached(seq);
            finish(g, "abort");
        } else {
            fail(g, why);
        }
        return false;
    }
    media_span rec = s;
    rec.chunk.reset();
    cached_media[(size_t) seq].push_back(rec);
    // The image's embeddings are decoded as batches of several tokens (batch-invariant kernels).
    if (invariant_prompts && s.n_tokens > 1 && exact[(size_t) seq] == c.size()) exact[(size_t) seq] += (size_t) s.n_tokens;
    c.insert(c.end(), (size_t) s.n_tokens, s.id);
    g.pending_at += (size_t) s.n_tokens;
    token_metrics_add(g.prompt_metrics, m);
    return true;
}

}  // namespace bmoe
