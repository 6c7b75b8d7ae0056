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
    // The template's reasoning block (chat plans of thinking formats; llama.cpp's
    // common_chat_params thinking_start_tag / thinking_end_tags): what the reasoning budget
    // counts between. "" = the format has none. Set with or without a gbnf.
    std::string                  reasoning_start;
    std::vector<std::string>     reasoning_ends;   // the first is forced when the budget runs out
    // The grammar forces the answer (a tool call for tool_choice required or a named function,
    // the JSON for a schema): with no budget given, reasoning is bounded by default
    // (reasoning_budget_default) so the answer comes within max_tokens.
    bool                         forces_answer = false;
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
    // llama-server's reasoning budget (--reasoning-budget, request reasoning_budget_tokens):
    // tokens of reasoning before the sampler forces the end of the block (grammar.reasoning_ends
    // front, after reasoning_budget_message); -1 = unlimited, 0 = end it at once. Needs
    // grammar.reasoning_start / reasoning_ends (a chat plan of a thinking format).
    int32_t     reasoning_budget = (int32_t) contract::sampling::reasoning_budget.def;
    std::string reasoning_budget_message;
    grammar_spec grammar;
};

// The budget a generation runs with: the request's, or for a grammar that forces the answer and
// no budget given, half of max_tokens (at least half is left for the call or the JSON). -1 when
// unlimited (no forced answer, no budget) or the format has no reasoning block.
inline int32_t reasoning_budget_default(const sampling_params & p, int32_t max_tokens) {
    if (p.grammar.reasoning_start.empty() || p.grammar.reasoning_ends.empty()) return -1;
    if (p.reasoning_budget >= 0) return p.reasoning_budget;
    return p.grammar.forces_answer ? max_tokens / 2 : -1;
}

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
// state, penalties). `left`: the tokens that may still be generated, this one included; a grammar
// that forces the answer is closed within them (answer_close.h). Throws std::runtime_error when
// the grammar admits no token.
llama_token sampler_sample(sampler * s, llama_context * ctx, int32_t idx, int32_t left);

}  // namespace bmoe
