#include "bmoe/runtime/generator.h"

#include "bmoe/sys/proc_stats.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace bmoe {

namespace {

std::string token_piece(const llama_vocab * vocab, llama_token t) {
    std::string out(32, '\0');
    int n = llama_token_to_piece(vocab, t, out.data(), (int32_t) out.size(), 0, true);
    if (n < 0) {
        out.resize((size_t) -n);
        n = llama_token_to_piece(vocab, t, out.data(), (int32_t) out.size(), 0, true);
    }
    out.resize(n > 0 ? (size_t) n : 0);
    return out;
}

// Measures one llama_decode: wall time, process counters, and the observer's stream counters.
struct decode_timer {
    decode_observer * obs;
    proc_stats        p0;
    double            t0;

    decode_timer(decode_observer * o, std::atomic<bool> * abort) : obs(o), p0(proc_stats_now()), t0(now_ms()) {
        if (obs) obs->begin_decode(abort);
    }

    token_metrics finish() {
        token_metrics m;
        m.wall_ms = now_ms() - t0;
        const proc_stats p1 = proc_stats_now();
        m.cpu_ms       = p1.cpu_ms - p0.cpu_ms;
        m.major_faults = p1.major_faults - p0.major_faults;
        m.minor_faults = p1.minor_faults - p0.minor_faults;
        if (obs) {
            obs->end_decode(m);
        }
        if (m.compute_ms == 0) {
            m.compute_ms = std::max(0.0, m.wall_ms - m.io_ms - m.mgmt_ms - m.stall_ms);
        }
        m.rss_bytes = proc_rss_bytes();
        return m;
    }
};

}  // namespace

// Polled by llama.cpp's grammar (patch 0004) on this thread for the whole generation, when it
// has a grammar; without one the watch costs nothing per token.
struct generator::grammar_watch {
    const std::atomic<bool> * abort;
    const bool                active;
    double                    deadline  = 0;  // now_ms() time
    bool                      timed_out = false;

    grammar_watch(const std::atomic<bool> * abort_flag, bool has_grammar) : abort(abort_flag), active(has_grammar) {
#ifdef BMOE_HAVE_GRAMMAR_STOP
        if (active) llama_grammar_set_stop_callback(&grammar_watch::should_stop, this);
#endif
    }
    ~grammar_watch() {
#ifdef BMOE_HAVE_GRAMMAR_STOP
        if (active) llama_grammar_set_stop_callback(nullptr, nullptr);
#endif
    }
    grammar_watch(const grammar_watch &) = delete;
    grammar_watch & operator=(const grammar_watch &) = delete;

    static bool should_stop(void * data) {
        auto * w = static_cast<grammar_watch *>(data);
        if (w->abort->load(std::memory_order_relaxed)) return true;
        w->timed_out = now_ms() > w->deadline;
        return w->timed_out;
    }
};

template <class F> bool generator::watched(grammar_watch & w, int32_t step_ms, F && f) {
    if (!w.active) {
        f();
        return true;
    }
    w.deadline  = now_ms() + step_ms;
    w.timed_out = false;
    try {
        f();
    } catch (const std::runtime_error & e) {
        if (std::string(e.what()) != "grammar: stopped") throw;
        if (!w.timed_out) return false;
        throw std::runtime_error("grammar: one sampling step took longer than " + std::to_string(step_ms) +
                                 " ms (the grammar allows too many ways to continue); the request was stopped");
    }
    return true;
}

void generator::reset() {
    llama_memory_clear(llama_get_memory(ctx), true);
    cached.clear();
}

void generator::check_request(const generate_request & req) const {
    const int32_t n_ctx = (int32_t) llama_n_ctx(ctx);
    if (file_check) {
        const std::string changed = file_check(true);
        if (!changed.empty()) throw std::runtime_error(changed);
    }
    if (req.tokens.empty()) {
        throw std::runtime_error("the prompt is empty (0 tokens)");
    }
    if ((int32_t) req.tokens.size() >= n_ctx) {
        throw std::runtime_error("the prompt has " + std::to_string(req.tokens.size()) +
                                 " tokens but the context holds " + std::to_string(n_ctx));
    }
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    for (llama_token t : req.tokens) {
        if (t < 0 || t >= n_vocab) {
            throw std::runtime_error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                                     std::to_string(n_vocab - 1) + ")");
        }
    }
}

size_t generator::keep_cached_prefix(const std::vector<llama_token> & tokens) {
    // Reuse the longest cached prefix; at least one token must be evaluated to get logits.
    size_t n_keep = 0;
    while (n_keep < cached.size() && n_keep < tokens.size() && cached[n_keep] == tokens[n_keep]) {
        n_keep++;
    }
    if (n_keep == tokens.size()) {
        n_keep--;
    }
    llama_memory_t mem = llama_get_memory(ctx);
    if (!llama_memory_seq_rm(mem, 0, (llama_pos) n_keep, -1)) {
        llama_memory_clear(mem, true);
        n_keep = 0;
    }
    cached.resize(n_keep);
    return n_keep;
}

void generator::throw_if_failed() {
    // An observer that stopped a decode (a failed read, a changed file) is an error, not an abort.
    // So is a model file that changed under the decode (its output is garbage).
    std::string why = observer ? observer->error() : std::string();
    if (why.empty() && file_check) why = file_check(false);
    if (!why.empty()) {
        drop_uncached();
        throw std::runtime_error(why);
    }
}

void generator::drop_uncached() {
    llama_memory_seq_rm(llama_get_memory(ctx), 0, (llama_pos) cached.size(), -1);
}

bool generator::decode(llama_token * toks, int32_t n) {
    const int32_t rc = llama_decode(ctx, llama_batch_get_one(toks, n));
    throw_if_failed();
    if (rc == 2 || (rc != 0 && abort_flag.load())) {
        return false; // aborted inside the graph
    }
    if (rc != 0) {
        throw std::runtime_error("llama_decode failed with code " + std::to_string(rc) + " at position " + std::to_string(cached.size()));
    }
    cached.insert(cached.end(), toks, toks + n);
    return true;
}

bool generator::eval_prompt(std::vector<llama_token> pending, token_metrics & metrics) {
    // In n_batch chunks like llama-completion; one metrics record covers the whole prompt.
    decode_timer first(observer, &abort_flag);
    for (size_t i = 0; i < pending.size(); i += (size_t) n_batch) {
        const int32_t n = (int32_t) std::min(pending.size() - i, (size_t) n_batch);
        if (abort_flag.load() || !decode(pending.data() + i, n)) {
            throw_if_failed();
            drop_uncached();
            return false;
        }
    }
    metrics = first.finish();
    return true;
}

bool generator::shift_context() {
    llama_memory_t mem = llama_get_memory(ctx);
    if (!llama_memory_can_shift(mem) || cached.size() < 4) return false;
    const int32_t n_keep    = 1;  // the first token (BOS where the model has one)
    const int32_t n_past    = (int32_t) cached.size();
    const int32_t n_discard = (n_past - n_keep) / 2;
    if (!llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard)) return false;
    llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past, -n_discard);
    cached.erase(cached.begin() + n_keep, cached.begin() + n_keep + n_discard);
    return true;
}

generate_result generator::run(const generate_request & req, const std::function<void(token_event &&)> & on_token) {
    // abort_flag is NOT cleared here: the caller clears it when the generation is requested, so an
    // abort that arrives while this thread still waits for the model's decode lock is honoured.
    check_request(req);
    generate_result res;
    const size_t n_keep = keep_cached_prefix(req.tokens);
    res.n_prompt        = (int32_t) req.tokens.size();
    res.n_prompt_reused = (int32_t) n_keep;
    grammar_watch watch(&abort_flag, !req.sampling.grammar.gbnf.empty());
    sampler_ptr smpl;
    if (!watched(watch, req.grammar_step_ms, [&] {
            smpl = sampler_init(llama_get_model(ctx), (int32_t) llama_n_ctx(ctx), req.sampling);
            sampler_accept_prompt(smpl.get(), req.tokens);
        })) {
        res.stop_reason = "abort";
        return res;
    }

    const double  t_prompt = now_ms();
    token_metrics metrics;
    const bool    prompt_done = eval_prompt({ req.tokens.begin() + (long) n_keep, req.tokens.end() }, metrics);
    res.prompt_ms = now_ms() - t_prompt;
    if (!prompt_done) {
        res.stop_reason = "abort";
        return res;
    }
    const int32_t n_ctx   = (int32_t) llama_n_ctx(ctx);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    for (int32_t i = 0; i < req.max_tokens; i++) {
        token_event ev;
        ev.index   = i;
        if (!watched(watch, req.grammar_step_ms, [&] { ev.token = sampler_sample(smpl.get(), ctx); })) {
            res.stop_reason = "abort";
            return res;
        }
        ev.is_eog  = llama_vocab_is_eog(vocab, ev.token);
        ev.piece   = ev.is_eog ? std::string() : token_piece(vocab, ev.token);
        ev.metrics = metrics;
        if (req.want_logits) {
            const float * lg = llama_get_logits_ith(ctx, -1);
            ev.logits.assign(lg, lg + n_vocab);
        }
        const bool eog = ev.is_eog;
        llama_token tok = ev.token;
        on_token(std::move(ev));
        res.n_generated++;
        if (eog) {
            res.stop_reason = "eog";
            return res;
        }
        if (i + 1 == req.max_tokens) {
            break; // the last token is not fed back: a next turn re-evaluates it as part of its prompt
        }
        if (abort_flag.load()) {
            res.stop_reason = "abort";
            return res;
        }
        if ((int32_t) cached.size() + 1 >= n_ctx && !(req.context_shift && shift_context())) {
            res.stop_reason = "context";
            return res;
        }
        decode_timer t(observer, &abort_flag);
        if (!decode(&tok, 1)) {
            throw_if_failed();
            drop_uncached();
            res.stop_reason = "abort";
            return res;
        }
        metrics = t.finish();
    }
    res.stop_reason = "length";
    return res;
}

}  // namespace bmoe
