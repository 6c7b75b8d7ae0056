#pragma once
// Choosing the next token: the sampling parameters a request carries and the sampler built from
// them. Two implementations, one per addon, chosen at link time (no virtual calls):
//   sampler_common.cpp — the native addon: llama.cpp's common_sampler (the chain llama-completion
//                        and llama-server use: penalties, top-k/p, min-p, temperature, grammar with
//                        lazy triggers and generation-prompt prefill, rejection sampling);
//   sampler_chain.cpp  — the wasm32-wasi build, which has no common library: the same chain built
//                        from libllama's samplers; user grammars only.
#include "bmoe/contract/params.h"
#include "llama.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bmoe {

struct grammar_trigger {
    enum kind_t { token, word, pattern, pattern_full };
    kind_t      kind  = word;
    std::string value;
    llama_token id    = LLAMA_TOKEN_NULL; // kind token
};

// A GBNF constraint. `output` and `tools` grammars come from a chat plan and begin with the
// generation prompt the template already wrote, so the sampler is fed that text first.
struct grammar_spec {
    enum kind_t { user, output, tools };
    std::string                  gbnf;  // "" = no constraint
    kind_t                       kind = user;
    bool                         lazy = false;
    std::vector<grammar_trigger> triggers;
    std::string                  generation_prompt;
};

struct sampling_params {
    float    temperature       = (float) contract::sampling::temperature.def;  // <= 0: the most likely token
    int32_t  top_k             = (int32_t) contract::sampling::top_k.def;
    float    top_p             = (float) contract::sampling::top_p.def;
    float    min_p             = (float) contract::sampling::min_p.def;
    uint32_t seed              = (uint32_t) contract::sampling::seed.def;
    float    repeat_penalty    = (float) contract::sampling::repeat_penalty.def;  // over the last repeat_last_n tokens, prompt included
    int32_t  repeat_last_n     = (int32_t) contract::sampling::repeat_last_n.def;  // -1 = the whole context
    float    presence_penalty  = (float) contract::sampling::presence_penalty.def;
    float    frequency_penalty = (float) contract::sampling::frequency_penalty.def;
    std::vector<llama_logit_bias> logit_bias;
    grammar_spec grammar;
};

struct sampler;
struct sampler_deleter {
    void operator()(sampler * s) const;
};
using sampler_ptr = std::unique_ptr<sampler, sampler_deleter>;

// Throws std::runtime_error naming the problem (a grammar that does not parse, a feature this
// build lacks).
sampler_ptr sampler_init(const llama_model * model, int32_t n_ctx, const sampling_params & p);

// Tokens already in the sequence (the prompt): they count for the repeat penalties.
void sampler_accept_prompt(sampler * s, const std::vector<llama_token> & tokens);

// Samples from the logits of the batch's row `idx` (-1: the last) and records the token (grammar
// state, penalties). Throws std::runtime_error when the grammar admits no token.
llama_token sampler_sample(sampler * s, llama_context * ctx, int32_t idx);

}  // namespace bmoe
