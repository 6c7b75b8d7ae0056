#pragma once
// The decode loop, free of Node-API: one llama_context holding n_seq sequences (slots), each with
// its own cached tokens (prefix reuse of the KV cache), and the generations running on them
// stepped together: one llama_decode per step carries the next token of every generating
// sequence and prompt chunks of the ones joining (llama-server's continuous batching), so a
// streamed step reads each routed expert once for all of them. Sampling, per-token metrics,
// abort (per generation), context shift. One generator per llama_context; not thread-safe except
// the atomics (`generation::abort`, `stop_decode`).
#include "bmoe/compute/wait_policy.h"
#include "bmoe/runtime/media.h"
#include "bmoe/runtime/sampler.h"
#include "bmoe/runtime/token_probs.h"
#include "bmoe/stream/decode_observer.h"

#include "llama.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bmoe {

struct generate_request {
    std::vector<llama_token> tokens;       // the whole conversation so far
    int32_t                  seq        = (int32_t) contract::generate::seq.def;  // the sequence (slot)
    int32_t                  max_tokens = (int32_t) contract::generate::max_tokens.def;
    sampling_params          sampling;
    bool                     want_logits = contract::generate::want_logits.def;
    // A full context: false stops with "context"; true discards the older half of the cached
    // tokens after the first and shifts the rest down (llama-completion's context shift).
    bool                     context_shift = contract::generate::context_shift.def;
    // One sampling step (or building the sampler) may take this long before the request fails:
    // a grammar's work grows with the ways the text may continue, and an abort must land within it.
    int32_t                  grammar_step_ms = (int32_t) contract::generate::grammar_step_ms.def;
    // Log-probabilities (token_probs.h): each token's and the n_probs most likely; -1 = none.
    int32_t                  n_probs = (int32_t) contract::generate::n_probs.def;
    // Score the prompt too: logits at every prompt position, so no cached prefix is reused.
    bool                     prompt_logprobs = contract::generate::prompt_logprobs.def;
    // Background work (a turn preparation): its prompt waits for the steps no other prompt needs.
    bool                     background = contract::generate::background.def;
    // The prompt's images (runtime/media): their cells in `tokens` carry media tokens; null = text.
    std::shared_ptr<const media_prompt> media;
};

struct token_event {
    int32_t            index  = 0;
    llama_token        token  = 0;
    std::string        piece;             // raw bytes, may split a UTF-8 sequence
    bool               is_eog = false;
    token_metrics      metrics;
    std::vector<float> logits;
    bool               has_probs = false;  // n_probs >= 0
    token_probs        probs;
};

struct generate_result {
    std::string stop_reason;              // eog | length | abort | context
    int32_t     n_prompt        = 0;
    int32_t     n_prompt_reused = 0;
    double      prompt_ms       = 0;
    int32_t     n_generated     = 0;
    // prompt_logprobs: prompt token i + 1's log-probability after tokens 0..i (the first has none).
    std::vector<token_probs> prompt_probs;
};

// One request in progress on one sequence. Made by the caller, started and stepped by the
// generator until `done`; then `error` ("" on success) or `result` says how it ended.
struct generation {
    generate_request                     req;
    std::function<void(token_event &&)>  on_token;
    std::atomic<bool>                    abort{false};  // the caller's: stops it within a token
    bool                                 done = false;
    std::string                          error;          // one line, when it failed
    generate_result                      result;

    // The generator's bookkeeping.
    sampler_ptr              smpl;
    std::vector<llama_token> pending;        // prompt tokens not evaluated yet
    size_t                   pending_at = 0;
    size_t                   pending_base = 0;  // req.tokens index of pending[0] (the reused prefix)
    llama_token              next       = LLAMA_TOKEN_NULL;  // sampled, fed back at the next step
    int32_t                  logits_at  = -1;  // its row in this step's batch, -1 = none
    int32_t                  n_in_batch = 0;   // tokens it has in this step's batch
    int32_t                  prompt_row = 0;   // its prompt chunk's first row in this step's batch
    bool                     in_prompt  = true;
    double                   t_prompt   = 0;
    token_metrics            prompt_metrics;   // the decodes of its prompt, folded
};

struct generator {
    llama_context *          ctx      = nullptr;
    const llama_vocab *      vocab    = nullptr;
    int32_t                  n_batch  = 512;
    int32_t                  n_seq    = 1;
    decode_observer *        observer = nullptr;
    // "" while the model file is as loaded, else why not (vm/file_guard). Called with full = true
    // before a request (stats the file) and full = false after every decode (only the SIGBUS mark:
    // the per-token path stays free of syscalls; a streamed model's streamer stats it per decode
    // anyway). Empty function: no check (the wasm build reads the file into memory).
    std::function<std::string(bool full)> file_check;
    std::vector<std::vector<llama_token>> cached;  // per sequence: tokens whose KV entries are in ctx
    // Per sequence: how many of the cached tokens, from the first, were evaluated in batches of
    // several tokens, which llama_decode computes with batch-invariant kernels (patch 0008): their
    // KV entries are those a cold evaluation of the same tokens computes, bit for bit, so only
    // they are reused. A generated token's entries come from a one-token decode (upstream's
    // kernels): a next prompt holding it evaluates it again, as it does when the answer does not
    // tokenize back to the same tokens.
    std::vector<size_t> exact;
    // LLAMA_BATCH_INVARIANT=0 (read at attach; llama.cpp reads it at context creation): upstream's
    // kernels for every decode, and every cached token reused, as before patch 0008 (to measure it).
    bool invariant_prompts = true;
    // Per sequence: the images among its cached tokens (no chunk kept), in order. A cell's
    // position is its index less what the images before it save (M-RoPE: an image takes n_pos
    // positions for n_tokens cells).
    std::vector<std::vector<media_span>> cached_media;
    // Encodes an image and decodes its embeddings into `ctx` at `pos` of `seq` (runtime/media's
    // media_eval, set by the native addon; the wasm build takes no images). Throws one line.
    std::function<void(const media_prompt & m, const media_span & s, llama_pos pos, int32_t seq)> eval_media;
    // Raised by the observer (a decode it cannot finish) or by the owner (closing): the running
    // llama_decode stops at its next graph node. Cleared at the start of every step.
    std::atomic<bool>        stop_decode{false};
    // Raised by the owner when a request that is not background work arrives, lowered when it
    // joins: a step of background prompt chunks only (turn preparations) then stops at its next
    // graph node, and the chunks are evaluated again later; the request waits for no chunk.
    std::atomic<bool>        foreground_waiting{false};
    // How the compute threads wait at ggml's barriers, chosen before each decode (compute/), and
    // the context's pool, whose polling between graphs follows it (null: none attached).
    wait_policy              waits;
    double                   last_decode_end_ms = 0;  // now_ms() after the last decode (the gap before the next)
    bool                     last_step_prompt   = false;  // the last step evaluated prompt tokens (plan_step alternates)
    ggml_threadpool *        threadpool = nullptr;

    generator() = default;
    ~generator();
    generator(const generator &) = delete;
    generator & operator=(const generator &) = delete;

    // Sizes `cached` for n_seq sequences and installs the abort callback. Call once, after the
    // fields above are set.
    void attach();
    // Starts g on its sequence: the request checked, the cached prefix kept, the sampler built.
    // On failure g is done with its error; an abort already raised ends it with "abort".
    void start(generation & g);
    // One llama_decode over `active` (all started, not done, on distinct sequences): the next
    // token of each generating one, then prompt chunks up to n_batch tokens. Generations that end
    // are marked done; the caller removes them.
    void step(const std::vector<generation *> & active);
    // One generation alone, on this thread (the wasm addon, which has no threads).
    // Throws std::runtime_error with its one-line error.
    generate_result run(const generate_request & req, const std::function<void(token_event &&)> & on_token);
    // Forgets a sequence's cached tokens and KV entries (-1: every sequence).
    void reset(int32_t seq);
    // Every per-sequence context holds this many tokens.
    int32_t n_ctx_seq() const;

    // The llama abort callback's question: stop the running decode?
    bool should_abort() const;

  private:
    struct grammar_watch;
    // Runs f (sampler work) so that an abort or the step's time budget stops a grammar's long work
    // (patch 0004): false when aborted; past the budget, a one-line error.
    template <class F> bool watched(generation & g, F && f);
    void   check_request(const generate_request & req) const;
    void   check_media(const generate_request & req) const;  // a request with images: its cells and spans agree
    // Keeps the KV entries of the longest prefix `tokens` shares with the sequence's cache.
    size_t keep_cached_prefix(int32_t seq, const std::vector<llama_token> & tokens, const media_prompt * media);
    void   drop_uncached(int32_t seq);
    void   drop_inexact(int32_t seq);
    // False when the memory cannot shift (the caller then stops with "context").
    bool   shift_context(int32_t seq);
    // Before a step: whether g can put its next token in (false: it ended).
    bool   admit(generation & g);
    // After a successful decode: g's sampling, its token event, its end.
    void   sample(generation & g, const token_metrics & step_metrics);
    void   score_prompt(generation & g);  // prompt_logprobs: the chunk just decoded
    // A reusable prefix of n_keep cells cut back to the start of an image it ends inside (cached or
    // the request's); the sequence's record of images drops those past it.
    size_t media_cut(int32_t seq, size_t n_keep, const media_prompt * media);
    // The position of cell `index` of a sequence whose images before it are cached_media's.
    llama_pos pos_at(int32_t seq, size_t index) const;
    // g's image starting at its next pending token, or null.
    const media_span * pending_media(const generation & g) const;
    // Evaluates that image (its own decodes, timed like a step): false when g ended.
    bool   step_media(generation & g, const media_span & s);
    // Of n prompt tokens g could put in this step, how many come before its next image.
    size_t text_before_media(const generation & g, size_t n) const;
    // A step's members (in_batch) and how many tokens each puts in (n_in_batch); images first.
    void   plan_step(const std::vector<generation *> & active);
    // The planned tokens into `batch`, in sequence order; each member's logits row.
    void   fill_batch();
    void   finish(generation & g, const char * reason);
    void   fail(generation & g, const std::string & why);

    llama_batch                     batch{};
    int32_t                         batch_cap = 0;
    std::vector<generation *>       in_batch;  // read by should_abort during the decode
    bool                            background_step = false;  // in_batch holds background prompt chunks only
    double                          background_end_ms = 0;    // when the last background step ended (now_ms())
    double                          background_ms     = 0;    // and how long it took
};

}  // namespace bmoe
