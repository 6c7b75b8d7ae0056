// The native addon's sampler: llama.cpp's common_sampler, so sampling, grammars and lazy
// tool-call triggers behave exactly as in llama-completion and llama-server.
#include "bmoe/runtime/sampler.h"

#include "bmoe/runtime/log_capture.h"
#include "bmoe/limits/grammar_limits.h"
#include "bmoe/limits/one_line.h"

#include "sampling.h"

#include <stdexcept>

namespace bmoe {

struct sampler {
    common_sampler * s = nullptr;
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
    out->s = s;
    return out;
}

void sampler_accept_prompt(sampler * s, const std::vector<llama_token> & tokens) {
    for (llama_token t : tokens) common_sampler_accept(s->s, t, false);
}

llama_token sampler_sample(sampler * s, llama_context * ctx, int32_t idx) {
    const llama_token t = common_sampler_sample(s->s, ctx, idx);
    common_sampler_accept(s->s, t, true);
    return t;
}

}  // namespace bmoe
