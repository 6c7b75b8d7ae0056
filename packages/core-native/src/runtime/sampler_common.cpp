// The native addon's sampler: llama.cpp's common_sampler, so sampling, grammars and lazy
// tool-call triggers behave exactly as in llama-completion and llama-server.
#include "bmoe/runtime/sampler.h"

#include "bmoe/runtime/answer_close.h"
#include "bmoe/runtime/reasoning_budget.h"
#include "bmoe/runtime/tokenize.h"
#include "bmoe/runtime/log_capture.h"
#include "bmoe/limits/grammar_limits.h"
#include "bmoe/limits/one_line.h"

#include "common.h"
#include "sampling.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace bmoe {

struct sampler {
    common_sampler *         s = nullptr;
    const llama_vocab *      vocab = nullptr;
    answer_close_ptr         close;  // a forced answer's grammar, to end it within max_tokens
    // The reasoning budget read on the text (reasoning_budget.h), where every token written can be
    // checked against the grammar: no grammar, or a forced answer's (`close`). Other grammars (a
    // lazy tool grammar) keep llama.cpp's, which its lazy grammar relies on.
    bool                     text_budget = false;
    reasoning_budget         rb;
    std::vector<llama_token> rb_end;  // the forced end's tokens
    size_t                   rb_at = 0;
};

void sampler_deleter::operator()(sampler * s) const {
    if (s) common_sampler_free(s->s);
    delete s;
}

namespace {

common_grammar_trigger to_common(const grammar_trigger & t) {
    common_grammar_trigger c;
    c.value = t.value;
    c.token = t.id;
    switch (t.kind) {
        case grammar_trigger::token:        c.type = COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN; break;
        case grammar_trigger::word:         c.type = COMMON_GRAMMAR_TRIGGER_TYPE_WORD; break;
        case grammar_trigger::pattern:      c.type = COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN; break;
        case grammar_trigger::pattern_full: c.type = COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL; break;
    }
    return c;
}

common_grammar_type grammar_type(grammar_spec::kind_t k) {
    switch (k) {
        case grammar_spec::output: return COMMON_GRAMMAR_TYPE_OUTPUT_FORMAT;
        case grammar_spec::tools:  return COMMON_GRAMMAR_TYPE_TOOL_CALLS;
        default:                   return COMMON_GRAMMAR_TYPE_USER;
    }
}

// The generation prompt's tokens after its last `start` sequence, as common_sampler_init feeds
// them to the reasoning budget (common/sampling.cpp: the template's tokens, a leading space some
// tokenizers add before a special token left out). The budget counts them as reasoning: with
// qwen3.5's "<think>\n" a budget of 0 would be used up by the "\n" and end nothing. They are
// added to the budget, so it counts generated tokens only.
int32_t prompt_tokens_after(const llama_vocab * vocab, const std::string & generation_prompt, const std::vector<llama_token> & start) {
    if (generation_prompt.empty() || start.empty()) return 0;
    std::vector<llama_token> tokens = common_tokenize(vocab, generation_prompt, false, true);
    if (!tokens.empty()) {
        const std::string piece = common_token_to_piece(vocab, tokens[0], true);
        if (!piece.empty() && std::isspace((unsigned char) piece[0]) && !std::isspace((unsigned char) generation_prompt[0])) tokens.erase(tokens.begin());
    }
    const auto at = std::find_end(tokens.begin(), tokens.end(), start.begin(), start.end());
    return at == tokens.end() ? 0 : (int32_t) (tokens.end() - (at + (long) start.size()));
}

// The reasoning budget, as llama-server sets it (server-common.cpp, server-schema.cpp): the
// template's tags tokenized with special tokens, the forced sequence the message then the
// first end tag. common_sampler counts from the start tag (in the generation prompt or
// generated), forces the end sequence token by token once `reasoning_budget` tokens have
// passed, and applies it before the grammar (whose reasoning rule ends with the same tag).
// llama.cpp also builds it with no budget when the grammar is lazy (the grammar then stays
// off inside the reasoning block, so a trigger there does not fire).
void llama_budget(common_params_sampling & c, const llama_vocab * vocab, const sampling_params & p) {
    c.reasoning_budget_start  = common_tokenize(vocab, p.grammar.reasoning_start, false, true);
    c.reasoning_budget_tokens = p.reasoning_budget < 0 ? -1 : p.reasoning_budget + prompt_tokens_after(vocab, p.grammar.generation_prompt, c.reasoning_budget_start);
    for (const auto & e : p.grammar.reasoning_ends) {
        if (!e.empty()) c.reasoning_budget_end.push_back(common_tokenize(vocab, e, false, true));
    }
    if (!c.reasoning_budget_end.empty()) {
        c.reasoning_budget_forced = c.reasoning_budget_end.front();
        if (!p.reasoning_budget_message.empty()) {
            const auto msg = common_tokenize(vocab, p.reasoning_budget_message, false, true);
            c.reasoning_budget_forced.insert(c.reasoning_budget_forced.begin(), msg.begin(), msg.end());
        }
        c.reasoning_budget_message = p.reasoning_budget_message;
    }
    // The budget counts from a start tag the template already wrote (qwen3.5's "<think>\n"):
    // common_sampler feeds it the generation prompt, as it feeds a chat grammar.
    c.generation_prompt = p.grammar.generation_prompt;
}

}  // namespace

sampler_ptr sampler_init(const llama_model * model, int32_t n_ctx, const sampling_params & p) {
    common_params_sampling c;
    c.seed            = p.seed;
    c.temp            = p.temperature;
    c.top_k           = p.top_k;
    c.top_p           = p.top_p;
    c.min_p           = p.min_p;
    c.penalty_repeat  = p.repeat_penalty;
    c.penalty_last_n  = p.repeat_last_n < 0 ? n_ctx : p.repeat_last_n;
    c.penalty_present = p.presence_penalty;
    c.penalty_freq    = p.frequency_penalty;
    c.logit_bias      = p.logit_bias;
    c.no_perf         = true;
    if (!p.grammar.gbnf.empty()) {
        // Bounded before llama.cpp parses it (its parser recurses, its sampler multiplies stacks);
        // this also refuses llguidance grammars, on which common_sampler aborts the process.
        const std::string bad = grammar_check(p.grammar.gbnf);
        if (!bad.empty()) throw std::runtime_error(bad);
        c.grammar           = common_grammar(grammar_type(p.grammar.kind), p.grammar.gbnf);
        c.grammar_lazy      = p.grammar.lazy;
        c.generation_prompt = p.grammar.generation_prompt;
        for (const auto & t : p.grammar.triggers) c.grammar_triggers.push_back(to_common(t));
    }
    const bool has_tags    = !p.grammar.reasoning_start.empty() && !p.grammar.reasoning_ends.empty();
    const bool text_budget = has_tags && p.reasoning_budget >= 0 && (p.grammar.gbnf.empty() || (p.grammar.forces_answer && !p.grammar.lazy));
    if (has_tags && !text_budget && (p.reasoning_budget >= 0 || (p.grammar.lazy && !p.grammar.gbnf.empty()))) {
        llama_budget(c, llama_model_get_vocab(model), p);
    }
    log_capture_reset();
    common_sampler * s = nullptr;
    try {
        s = common_sampler_init(model, c);
    } catch (const std::exception & e) {
        // llama.cpp logs the grammar's syntax error (patch 0004: without the grammar itself) and
        // throws only that it failed.
        const std::string what = e.what();
        if (what == "grammar: stopped") throw;  // the generator's watch (an abort, the step's budget)
        const std::string why = log_capture_first_error();
        if (!p.grammar.gbnf.empty() && what == "failed to parse grammar") {
            throw std::runtime_error(one_line_clip("grammar: llama.cpp cannot use it: " + (why.empty() ? what : why), 240));
        }
        throw std::runtime_error(one_line_clip("sampler: " + what + (why.empty() || why == what ? "" : ": " + why), 240));
    }
    if (!s) throw std::runtime_error("sampler: llama.cpp could not create it");
    sampler_ptr out(new sampler);
    out->s     = s;
    out->vocab = llama_model_get_vocab(model);
    if (text_budget) {
        out->text_budget = true;
        out->rb = reasoning_budget_make(p.grammar.reasoning_start, p.grammar.reasoning_ends, p.reasoning_budget, p.reasoning_budget_message);
        reasoning_budget_prefill(out->rb, p.grammar.generation_prompt);
        out->rb_end = common_tokenize(out->vocab, out->rb.forced_text, false, true);
    }
    if (p.grammar.forces_answer && !p.grammar.gbnf.empty() && !p.grammar.lazy) {
        out->close = answer_close_init(llama_model_get_vocab(model), p.grammar.gbnf, p.grammar.generation_prompt,
                                       p.grammar.kind != grammar_spec::user);
    }
    return out;
}

void sampler_accept_prompt(sampler * s, const std::vector<llama_token> & tokens) {
    for (llama_token t : tokens) common_sampler_accept(s->s, t, false);
}

llama_token sampler_sample(sampler * s, llama_context * ctx, int32_t idx, int32_t left) {
    // A forced answer is written out once the tokens left only hold its shortest completion
    // (answer_close.h); a sampled token that would leave it no room gives way to it.
    llama_token t = s->close ? answer_close_forced(*s->close, left) : LLAMA_TOKEN_NULL;
    if (t == LLAMA_TOKEN_NULL && s->text_budget && reasoning_budget_must_end(s->rb) && s->rb_at < s->rb_end.size()) {
        // The budget is used up: its end, token by token, where the grammar takes it (else the
        // model writes on until it does).
        const llama_token end = s->rb_end[s->rb_at];
        if (!s->close || (answer_close_takes(*s->close, end) && answer_close_keeps(*s->close, end, left))) t = end;
    }
    if (t == LLAMA_TOKEN_NULL) {
        t = common_sampler_sample(s->s, ctx, idx);
        if (s->close && !answer_close_keeps(*s->close, t, left)) {
            const llama_token forced = answer_close_forced(*s->close, 1);
            if (forced != LLAMA_TOKEN_NULL) t = forced;
        }
    }
    common_sampler_accept(s->s, t, true);
    if (s->close) answer_close_accept(*s->close, t);
    if (s->text_budget) {
        const bool ending = reasoning_budget_must_end(s->rb);
        if (ending && s->rb_at < s->rb_end.size() && t == s->rb_end[s->rb_at]) s->rb_at++;
        reasoning_budget_accept(s->rb, token_piece(s->vocab, t));
        if (!reasoning_budget_must_end(s->rb)) {
            s->rb_at = 0;
        } else if (s->rb_at >= s->rb_end.size()) {
            s->rb.state = reasoning_budget::done;  // written whole (its text did not read back as the tag)
            s->rb_at    = 0;
        }
    }
    return t;
}

}  // namespace bmoe
