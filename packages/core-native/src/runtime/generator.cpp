#include "bmoe/runtime/generator.h"

#include "bmoe/runtime/tokenize.h"

#include "barrier_wait.h"

#ifdef BMOE_HAVE_BATCH_INVARIANT
#include "llama-batch-invariant.h"
#endif
#include "decode_timer.h"

#include "bmoe/sys/proc_stats.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace bmoe {

namespace {

// A background prompt's chunk (a request arriving during it stops it at the next graph node).
constexpr size_t background_chunk = 64;

void batch_add(llama_batch & b, llama_token t, llama_pos pos, llama_seq_id seq, bool logits) {
    const int32_t i = b.n_tokens++;
    b.token[i]     = t;
    b.pos[i]       = pos;
    b.n_seq_id[i]  = 1;
    b.seq_id[i][0] = seq;
    b.logits[i]    = logits ? 1 : 0;
}

}  // namespace

// Polled by llama.cpp's grammar (patch 0004) on this thread while one generation samples, when it
// has a grammar; without one the watch costs nothing.
struct generator::grammar_watch {
    const std::atomic<bool> * abort;
    double                    deadline  = 0;  // now_ms() time
    bool                      timed_out = false;

    grammar_watch(const std::atomic<bool> * abort_flag, int32_t step_ms) : abort(abort_flag), deadline(now_ms() + step_ms) {
#ifdef BMOE_HAVE_GRAMMAR_STOP
        llama_grammar_set_stop_callback(&grammar_watch::should_stop, this);
#endif
    }
    ~grammar_watch() {
#ifdef BMOE_HAVE_GRAMMAR_STOP
        llama_grammar_set_stop_callback(nullptr, nullptr);
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

template <class F> bool generator::watched(generation & g, F && f) {
    if (g.req.sampling.grammar.gbnf.empty()) {
        f();
        return true;
    }
    grammar_watch w(&g.abort, g.req.grammar_step_ms);
    try {
        f();
    } catch (const std::runtime_error & e) {
        if (std::string(e.what()) != "grammar: stopped") throw;
        if (!w.timed_out) return false;
        throw std::runtime_error("grammar: one sampling step took longer than " + std::to_string(g.req.grammar_step_ms) +
                                 " ms (the grammar allows too many ways to continue); the request was stopped");
    }
    return true;
}

generator::~generator() {
    if (batch_cap > 0) llama_batch_free(batch);
}

void generator::attach() {
    cached.assign((size_t) n_seq, {});
    exact.assign((size_t) n_seq, 0);
    if (const char * v = std::getenv("LLAMA_BATCH_INVARIANT")) invariant_prompts = std::strcmp(v, "0") != 0;
    cached_media.assign((size_t) n_seq, {});
    // BMOE_WAIT overrides the barrier waiting (auto, spin, sleep, upstream) for measuring it.
    if (const char * w = std::getenv("BMOE_WAIT")) {
        if (!wait_mode_parse(w, waits.mode)) std::fprintf(stderr, "bmoe: BMOE_WAIT=%s is not auto, spin, sleep or upstream; using auto\n", w);
    }
    // The generating tokens of every sequence plus prompt chunks: at most n_batch per decode.
    batch_cap = n_batch;
    batch     = llama_batch_init(batch_cap, 0, 1);
    llama_set_abort_callback(ctx, [](void * data) { return static_cast<const generator *>(data)->should_abort(); }, this);
}

int32_t generator::n_ctx_seq() const {
    return (int32_t) llama_n_ctx_seq(ctx);
}

bool generator::should_abort() const {
    if (stop_decode.load(std::memory_order_relaxed)) return true;
    if (background_step && foreground_waiting.load(std::memory_order_relaxed)) return true;
    // A decode stops mid-graph only when every generation in it was aborted: one client leaving
    // must not cost the others their step.
    if (in_batch.empty()) return false;
    for (const generation * g : in_batch) {
        if (!g->abort.load(std::memory_order_relaxed)) return false;
    }
    return true;
}

void generator::check_request(const generate_request & req) const {
    if (req.seq < 0 || req.seq >= n_seq) {
        throw std::runtime_error("seq " + std::to_string(req.seq) + " is not a sequence of this context (0.." +
                                 std::to_string(n_seq - 1) + ")");
    }
    const int32_t n_ctx = n_ctx_seq();
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
    if (req.media) {
        check_media(req);
        return;
    }
    for (llama_token t : req.tokens) {
        if (t < 0 || t >= n_vocab) {
            throw std::runtime_error("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                                     std::to_string(n_vocab - 1) + ")" + (is_media_token(t) ? " (an image's cell without its image)" : ""));
        }
    }
}

void generator::finish(generation & g, const char * reason) {
    g.result.stop_reason = reason;
    g.done               = true;
    drop_inexact(g.req.seq);
}

void generator::fail(generation & g, const std::string & why) {
    drop_uncached(g.req.seq);
    g.error = why;
    g.done  = true;
}

void generator::start(generation & g) {
    // g.abort is NOT cleared here: the caller clears it when the generation is requested, so an
    // abort that arrives while it waits to be started is honoured.
    try {
        check_request(g.req);
        // Scoring the prompt needs its logits at every position: nothing cached is reused.
        if (g.req.prompt_logprobs) reset(g.req.seq);
        const size_t n_keep = keep_cached_prefix(g.req.seq, g.req.tokens, g.req.media.get());
        g.result.n_prompt        = (int32_t) g.req.tokens.size();
        g.result.n_prompt_reused = (int32_t) n_keep;
        if (!watched(g, [&] {
                g.smpl = sampler_init(llama_get_model(ctx), n_ctx_seq(), g.req.sampling);
                if (!g.req.media) {
                    sampler_accept_prompt(g.smpl.get(), g.req.tokens);
                } else {
                    // The sampler sees the text (penalties, grammars); an image's cells are not tokens.
                    std::vector<llama_token> text;
                    for (llama_token t : g.req.tokens) if (!is_media_token(t)) text.push_back(t);
                    sampler_accept_prompt(g.smpl.get(), text);
                }
            })) {
            finish(g, "abort");
            return;
        }
        g.pending.assign(g.req.tokens.begin() + (long) n_keep, g.req.tokens.end());
        g.pending_base = n_keep;
        g.pending_at   = 0;
        g.in_prompt  = true;
        g.t_prompt   = now_ms();
    } catch (const std::exception & e) {
        g.error = e.what();
        g.done  = true;
    }
}

bool generator::admit(generation & g) {
    if (g.abort.load()) {
        drop_uncached(g.req.seq);
        finish(g, "abort");
        return false;
    }
    if (g.in_prompt) return true;
    if ((int32_t) cached[(size_t) g.req.seq].size() + 1 >= n_ctx_seq() && !(g.req.context_shift && shift_context(g.req.seq))) {
        finish(g, "context");
        return false;
    }
    return true;
}

void generator::plan_step(const std::vector<generation *> & active) {
    in_batch.clear();
    int32_t used = 0;
    // A step decodes the generating sequences' next tokens or evaluates prompt chunks, never both:
    // a decoded token takes the kernels it takes alone (upstream's), a prompt the batch-invariant
    // ones (patch 0008). With both waiting, steps alternate, so running streams keep flowing.
    // A background prompt (a turn preparation) waits while any other prompt does, and while other
    // sequences decode it takes at most a quarter of the time: a long one must not slow their
    // streams to a crawl (a step of 64 prompt tokens costs several decode steps).
    bool decodes = false, foreground_prompts = false, background_prompts = false;
    for (generation * g : active) {
        // An aborted prompt ends now, not at its next turn in a step (its sequence's next call waits).
        if (!g->done && g->in_prompt && g->abort.load()) admit(*g);
    }
    for (const generation * g : active) {
        if (g->done) continue;
        if (!g->in_prompt) decodes = true;
        else (g->req.background ? background_prompts : foreground_prompts) = true;
    }
    const bool background_ok = background_prompts && !foreground_prompts &&
                               (!decodes || now_ms() - background_end_ms >= 3 * background_ms);
    const bool prompts = foreground_prompts || background_ok;
    const bool prompt_step = prompts && (!decodes || !last_step_prompt || !invariant_prompts);
    const bool decode_step = decodes && (!prompts || !prompt_step || !invariant_prompts);
    for (generation * g : active) {
        g->logits_at  = -1;
        g->n_in_batch = 0;
        if (!decode_step || g->done || g->in_prompt || !admit(*g)) continue;
        if (used >= batch_cap) continue;  // more sequences than n_batch: next step
        g->n_in_batch = 1;
        used++;
        in_batch.push_back(g);
    }
    // Then prompt chunks in what is left of n_batch.
    for (generation * g : active) {
        if (!prompt_step || g->done || !g->in_prompt || used >= batch_cap) continue;
        if (!admit(*g) || (g->req.background && !background_ok)) continue;
        if (const media_span * s = pending_media(*g)) {
            if (!step_media(*g, *s)) continue;
        }
        const size_t cap = g->req.background ? std::min(background_chunk, (size_t) (batch_cap - used)) : (size_t) (batch_cap - used);
        size_t n = text_before_media(*g, std::min(g->pending.size() - g->pending_at, cap));
        // A chunk that would leave one token alone for the next step leaves two (see keep_cached_prefix).
        if (n >= 2 && g->pending.size() - g->pending_at - n == 1) n--;
        if (n == 0) continue;
        g->n_in_batch = (int32_t) n;
        used += (int32_t) n;
        in_batch.push_back(g);
    }
}

void generator::fill_batch() {
    // In sequence order: with a KV stream per sequence (kv_unified off) llama.cpp cuts a batch
    // into micro-batches whose sequences follow each other in batch order (0, 1, 2 …), one graph
    // each, and a streamed model reads a step's experts once per graph. Four sessions in the order
    // they joined (1, 3, 0, 2) cost three graphs for one step's four tokens (measured on the 3-layer
    // Qwen3-30B-A3B shape: 40.5 ms a step, 34.9 ms in sequence order). Idle sequences between busy
    // ones still cut a step (0, 2, 3: two graphs), as in llama-server without a unified KV cache.
    std::sort(in_batch.begin(), in_batch.end(), [](const generation * a, const generation * b) { return a->req.seq < b->req.seq; });
    batch.n_tokens = 0;
    for (generation * g : in_batch) {
        const int32_t   seq = g->req.seq;
        const llama_pos p0  = pos_at(seq, cached[(size_t) seq].size());
        if (!g->in_prompt) {
            g->logits_at = batch.n_tokens;
            batch_add(batch, g->next, p0, seq, true);
            continue;
        }
        // A prompt's last token asks for logits (every token's with prompt_logprobs), unless nothing
        // is sampled (max_tokens 0, a turn preparation): a step without outputs skips the output
        // layer (the vocabulary-sized head: 151,936 rows on the Qwen3 shapes).
        g->prompt_row = batch.n_tokens;
        for (int32_t i = 0; i < g->n_in_batch; i++) {
            const bool last = g->pending_at + (size_t) i + 1 == g->pending.size();
            if (last) g->logits_at = batch.n_tokens;
            batch_add(batch, g->pending[g->pending_at + (size_t) i], p0 + (llama_pos) i, seq, (last && g->req.max_tokens > 0) || g->req.prompt_logprobs);
        }
    }
}

void generator::step(const std::vector<generation *> & active) {
    plan_step(active);
    fill_batch();
    if (batch.n_tokens == 0) return;

    stop_decode.store(false);
    if (last_decode_end_ms > 0) waits.observe_gap(now_ms() - last_decode_end_ms);
    // llama_decode computes a batch of several tokens with batch-invariant kernels (patch 0008):
    // its prompt tokens' KV entries are then those one evaluation of the prompt computes. Steps
    // that only decode (several sequences' next tokens) keep upstream's kernels, as one token
    // decoded alone does.
    const bool prompt = std::any_of(in_batch.begin(), in_batch.end(), [](const generation * g) { return g->in_prompt; });
    last_step_prompt = prompt;
    background_step = std::all_of(in_batch.begin(), in_batch.end(), [](const generation * g) { return g->in_prompt && g->req.background; });
    const bool invariant = invariant_prompts && prompt && batch.n_tokens > 1;
#ifdef BMOE_HAVE_BATCH_INVARIANT
    llama_set_batch_invariant(ctx, prompt);
#endif
    const barrier_counts b0 = barrier_begin(waits, threadpool);
    decode_timer  timer(observer, &stop_decode);
    const double  t0 = now_ms();
    const int32_t rc = llama_decode(ctx, batch);
    const token_metrics m = timer.finish();
    barrier_end(waits, b0);
    last_decode_end_ms = now_ms();
    // An observer that stopped a decode (a failed read, a changed file) is an error, not an abort.
    // So is a model file that changed under the decode (its output is garbage).
    std::string why = observer ? observer->error() : std::string();
    if (why.empty() && file_check) why = file_check(false);
    if (why.empty() && rc != 0 && rc != 2 && !should_abort()) {
        why = "llama_decode failed with code " + std::to_string(rc);
    }
    const bool aborted = rc != 0 && why.empty();
    // Background chunks stopped for a request that arrived: not consumed, evaluated again later.
    const bool preempted = aborted && background_step && foreground_waiting.load() && !stop_decode.load();
    if (preempted) last_step_prompt = false;
    if (background_step) {
        background_end_ms = now_ms();
        background_ms     = background_end_ms - t0;
    }
    background_step = false;
    for (generation * gp : in_batch) {
        generation & g = *gp;
        if (!why.empty()) {
            fail(g, why);
            continue;
        }
        if (preempted && !g.abort.load()) {
            drop_uncached(g.req.seq);
            continue;
        }
        if (aborted) {
            drop_uncached(g.req.seq);
            finish(g, "abort");
            continue;
        }
        std::vector<llama_token> & c = cached[(size_t) g.req.seq];
        if (g.in_prompt) {
            if (g.req.prompt_logprobs) score_prompt(g);
            size_t & e = exact[(size_t) g.req.seq];
            if (invariant && e == c.size()) e += (size_t) g.n_in_batch;
            c.insert(c.end(), g.pending.begin() + (long) g.pending_at, g.pending.begin() + (long) (g.pending_at + (size_t) g.n_in_batch));
            g.pending_at += (size_t) g.n_in_batch;
            token_metrics_add(g.prompt_metrics, m);
        } else {
            c.push_back(g.next);
        }
        if (g.logits_at >= 0) sample(g, m);
    }
    in_batch.clear();
}

void generator::score_prompt(generation & g) {
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    for (int32_t i = 0; i < g.n_in_batch; i++) {
        const size_t next = g.pending_at + (size_t) i + 1;  // the prompt token this position predicts
        if (next >= g.pending.size()) break;
        const float * lg = llama_get_logits_ith(ctx, g.prompt_row + i);
        g.result.prompt_probs.push_back(token_probs_at(vocab, lg, n_vocab, g.pending[next], std::max(0, g.req.n_probs)));
        g.result.prompt_probs.back().piece = token_piece(vocab, g.pending[next]);
    }
}

void generator::sample(generation & g, const token_metrics & step_metrics) {
    const int32_t i = g.result.n_generated;
    token_event   ev;
    ev.index   = i;
    ev.metrics = step_metrics;
    if (g.in_prompt) {
        // One metrics record covers the whole prompt: the first token's.
        g.in_prompt         = false;
        g.result.prompt_ms  = now_ms() - g.t_prompt;
        ev.metrics          = g.prompt_metrics;
        g.pending.clear();
        if (g.req.max_tokens == 0) {
            finish(g, "length");
            return;
        }
    }
    if (g.abort.load()) {
        finish(g, "abort");
        return;
    }
    try {
        // The tokens this generation may still write, this one included: max_tokens, and without a
        // context shift the context's room (the next token needs a free cell).
        int32_t left = g.req.max_tokens - g.result.n_generated;
        if (!g.req.context_shift) left = std::min(left, std::max(1, n_ctx_seq() - (int32_t) cached[(size_t) g.req.seq].size()));
        if (!watched(g, [&] { ev.token = sampler_sample(g.smpl.get(), ctx, g.logits_at, left); })) {
            finish(g, "abort");
            return;
        }
    } catch (const std::exception & e) {
        g.error = e.what();
        g.done  = true;
        return;
    }
    ev.is_eog = llama_vocab_is_eog(vocab, ev.token);
    ev.piece  = ev.is_eog ? std::string() : token_piece(vocab, ev.token);
    if (g.req.n_probs >= 0) {
        ev.has_probs = true;
        ev.probs     = token_probs_at(vocab, llama_get_logits_ith(ctx, g.logits_at), llama_vocab_n_tokens(vocab), ev.token, g.req.n_probs);
    }
    if (g.req.want_logits) {
        const float * lg = llama_get_logits_ith(ctx, g.logits_at);
        ev.logits.assign(lg, lg + llama_vocab_n_tokens(vocab));
    }
    const bool eog = ev.is_eog;
    g.next         = ev.token;
    g.on_token(std::move(ev));
    g.result.n_generated++;
    if (eog) {
        finish(g, "eog");
    } else if (g.result.n_generated == g.req.max_tokens) {
        // The last token is not fed back: a next turn re-evaluates it as part of its prompt.
        finish(g, "length");
    }
}

generate_result generator::run(const generate_request & req, const std::function<void(token_event &&)> & on_token) {
    generation g;
    g.req      = req;
    g.on_token = on_token;
    start(g);
    const std::vector<generation *> one{ &g };
    while (!g.done) step(one);
    if (!g.error.empty()) throw std::runtime_error(g.error);
    return g.result;
}

}  // namespace bmoe
