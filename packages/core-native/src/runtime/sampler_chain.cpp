// The wasm32-wasi build's sampler: llama.cpp's sampler chain in common_sampler's order, built
// from libllama alone (this build has no common library). No grammars: the wasm addon refuses
// them before a request gets here.
#include "bmoe/runtime/sampler.h"

#include <stdexcept>

namespace bmoe {

struct sampler {
    llama_sampler * chain = nullptr;
};

void sampler_deleter::operator()(sampler * s) const {
    if (s) llama_sampler_free(s->chain);
    delete s;
}

sampler_ptr sampler_init(const llama_model * model, int32_t n_ctx, const sampling_params & p) {
    if (!p.grammar.gbnf.empty()) throw std::runtime_error("grammars need the native addon");
    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int32_t       n_vocab = llama_vocab_n_tokens(vocab);
    sampler_ptr out(new sampler);
    out->chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler * c = out->chain;
    if (!p.logit_bias.empty()) {
        llama_sampler_chain_add(c, llama_sampler_init_logit_bias(n_vocab, (int32_t) p.logit_bias.size(), p.logit_bias.data()));
    }
    const int32_t last_n = p.repeat_last_n < 0 ? n_ctx : p.repeat_last_n;
    llama_sampler_chain_add(c, llama_sampler_init_penalties(n_vocab, last_n, p.repeat_penalty, p.frequency_penalty, p.presence_penalty));
    llama_sampler_chain_add(c, llama_sampler_init_top_k(p.top_k));
    llama_sampler_chain_add(c, llama_sampler_init_top_p(p.top_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_min_p(p.min_p, 0));
    llama_sampler_chain_add(c, llama_sampler_init_temp(p.temperature));
    llama_sampler_chain_add(c, llama_sampler_init_dist(p.seed));
    return out;
}

void sampler_accept_prompt(sampler * s, const std::vector<llama_token> & tokens) {
    for (llama_token t : tokens) llama_sampler_accept(s->chain, t);
}

llama_token sampler_sample(sampler * s, llama_context * ctx, int32_t idx, int32_t /*left*/) {
    // llama_sampler_sample accepts the token itself. No grammars here, so nothing to close.
    return llama_sampler_sample(s->chain, ctx, idx);
}

}  // namespace bmoe
