#pragma once
// The decode loop, free of Node-API: prefix reuse of the KV cache, sampling, per-token metrics,
// abort. One generator per llama_context; not thread-safe except `abort`.
#include "bmoe/runtime/sampler.h"
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
    int32_t                  max_tokens = (int32_t) contract::generate::max_tokens.def;
    sampling_params          sampling;
    bool                     want_logits = contract::generate::want_logits.def;
    // A full context: false stops with "context"; true discards the older half of the cached
    // tokens after the first and shifts the rest down (llama-completion's context shift).
    bool                     context_shift = contract::generate::context_shift.def;
    // One sampling step (or building the sampler) may take this long before the request fails:
    // a grammar's work grows with the ways the text may continue, and an abort must land within it.
    int32_t                  grammar_step_ms = (int32_t) contract::generate::grammar_step_ms.def;
};

struct token_event {
    int32_t            index  = 0;
    llama_token        token  = 0;
    std::string        piece;             // raw bytes, may split a UTF-8 sequence
    bool               is_eog = false;
    token_metrics      metrics;
    std::vector<float> logits;
};

struct generate_result {
    std::string stop_reason;              // eog | length | abort | context
    int32_t     n_prompt        = 0;
    int32_t     n_prompt_reused = 0;
    double      prompt_ms       = 0;
    int32_t     n_generated     = 0;
};


struct generator {
    llama_context *          ctx      = nullptr;
    const llama_vocab *      vocab    = nullptr;
    int32_t                  n_batch  = 512;
    decode_observer *        observer = nullptr;
    // "" while the model file is as loaded, else why not (vm/file_guard). Called with full = true
    // before a request (stats the file) and full = false after every decode (only the SIGBUS mark:
    // the per-token path stays free of syscalls; a streamed model's streamer stats it per decode
    // anyway). Empty function: no check (the wasm build reads the file into memory).
    std::function<std::string(bool full)> file_check;
    std::vector<llama_token> cached;                 // tokens whose KV entries are in ctx (seq 0)
    std::atomic<bool>        abort_flag{false};  // cleared by the caller when a generation is requested

    // Throws std::runtime_error with a one-line message on failure.
    generate_result run(const generate_request & req, const std::function<void(token_event &&)> & on_token);
    void reset();

  private:
    struct grammar_watch;
    // Runs f (sampler work) so that an abort or the step's time budget stops a grammar's long work
    // (patch 0004): false when aborted; past the budget, a one-line error.
    template <class F> bool watched(grammar_watch & w, int32_t step_ms, F && f);
    void   check_request(const generate_request & req) const;
    // Keeps the KV entries of the longest prefix `tokens` shares with `cached`; returns its length.
    size_t keep_cached_prefix(const std::vector<llama_token> & tokens);
    // False when aborted (the unevaluated part is dropped from the KV cache).
    bool   eval_prompt(std::vector<llama_token> pending, token_metrics & metrics);
    bool   decode(llama_token * toks, int32_t n);
    void   throw_if_failed();
    void   drop_uncached();
    // False when the memory cannot shift (the caller then stops with "context").
    bool   shift_context();
};

}  // namespace bmoe
