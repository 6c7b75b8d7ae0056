// The JS objects both addons hand out — the native one (addon/) and the wasm32-wasi one (wasm/) —
// built in one place, so the two builds name the per-token metrics and the model's info fields the
// same way as binding/types.ts and cannot drift apart. Header-only: each addon compiles it with
// its own Node-API (node-addon-api on node headers, or on emnapi).
#pragma once

#include <napi.h>

#include "llama.h"
#include "bmoe/runtime/generator.h"
#include "bmoe/stream/token_metrics.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace bmoe {

// Natively a typed array written through Data() is already the JS one; emnapi (wasm) needs a
// sync step, which the wasm addon passes instead of this.
struct no_sync {
    template <class T> T operator()(Napi::Env, T arr) const { return arr; }
};

// [{ token, logprob, piece }], most likely first.
template <class Sync = no_sync>
inline Napi::Array token_probs_top_to_js(Napi::Env env, const token_probs & p, Sync sync = {}) {
    Napi::Array top = Napi::Array::New(env, p.top.size());
    for (size_t i = 0; i < p.top.size(); i++) {
        Napi::Object e = Napi::Object::New(env);
        e.Set("token", p.top[i].token);
        e.Set("logprob", p.top[i].logprob);
        Napi::Uint8Array piece = Napi::Uint8Array::New(env, p.top[i].piece.size());
        std::copy(p.top[i].piece.begin(), p.top[i].piece.end(), piece.Data());
        e.Set("piece", sync(env, piece));
        top.Set((uint32_t) i, e);
    }
    return top;
}

// How many numbers a token's `values` holds (NATIVE_TOKEN_VALUES in binding/contract.ts).
#define BMOE_COUNT_FIELD(type, snake, camel) +1
inline constexpr size_t token_value_count = 0 BMOE_TOKEN_ID_FIELDS(BMOE_COUNT_FIELD) BMOE_TOKEN_METRICS(BMOE_COUNT_FIELD);
#undef BMOE_COUNT_FIELD

// A token's numbers for onToken's `values`, in the order of the field lists (the id fields, then
// the metrics), the order binding/contract.ts's NATIVE_TOKEN_VALUES is generated in. The JS side
// builds the record from them in one object literal: the addon no longer sets ~25 keys per token.
inline void token_values(const token_event & ev, double * out) {
    const int32_t token_index = ev.index;
    const int32_t token_id    = ev.token;
    const token_metrics & m   = ev.metrics;
    size_t i = 0;
#define BMOE_PUT_ID_FIELD(type, snake, camel) out[i++] = static_cast<double>(snake);
    BMOE_TOKEN_ID_FIELDS(BMOE_PUT_ID_FIELD)
#undef BMOE_PUT_ID_FIELD
#define BMOE_PUT_METRIC(type, snake, camel) out[i++] = static_cast<double>(m.snake);
    BMOE_TOKEN_METRICS(BMOE_PUT_METRIC)
#undef BMOE_PUT_METRIC
}

// The token's bytes (may be a partial UTF-8 sequence).
template <class Sync = no_sync>
inline Napi::Uint8Array token_piece_to_js(Napi::Env env, const token_event & ev, Sync sync = {}) {
    Napi::Uint8Array piece = Napi::Uint8Array::New(env, ev.piece.size());
    std::copy(ev.piece.begin(), ev.piece.end(), piece.Data());
    return sync(env, piece);
}

// NativeTokenExtras, or undefined when the request asked for none: { logits?, logprob?, topLogprobs? }.
template <class Sync = no_sync>
inline Napi::Value token_extras_to_js(Napi::Env env, const token_event & ev, Sync sync = {}) {
    if (ev.logits.empty() && !ev.has_probs) return env.Undefined();
    Napi::Object o = Napi::Object::New(env);
    if (!ev.logits.empty()) {
        Napi::Float32Array lg = Napi::Float32Array::New(env, ev.logits.size());
        std::copy(ev.logits.begin(), ev.logits.end(), lg.Data());
        o.Set("logits", sync(env, lg));
    }
    if (ev.has_probs) {
        o.Set("logprob", ev.probs.logprob);
        o.Set("topLogprobs", token_probs_top_to_js(env, ev.probs, sync));
    }
    return o;
}

// NativeGenerateResult.
inline Napi::Object generate_result_to_js(Napi::Env env, const generate_result & res) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("stopReason", res.stop_reason);
    o.Set("promptTokens", res.n_prompt);
    o.Set("promptTokensReused", res.n_prompt_reused);
    o.Set("promptMs", res.prompt_ms);
    o.Set("generatedTokens", res.n_generated);
    if (!res.prompt_probs.empty()) {
        Napi::Array pp = Napi::Array::New(env, res.prompt_probs.size());
        for (size_t i = 0; i < res.prompt_probs.size(); i++) {
            Napi::Object e = Napi::Object::New(env);
            const token_probs & p = res.prompt_probs[i];
            e.Set("token", p.token);
            Napi::Uint8Array piece = Napi::Uint8Array::New(env, p.piece.size());
            std::copy(p.piece.begin(), p.piece.end(), piece.Data());
            e.Set("piece", piece);
            e.Set("logprob", p.logprob);
            e.Set("topLogprobs", token_probs_top_to_js(env, res.prompt_probs[i]));
            pp.Set((uint32_t) i, e);
        }
        o.Set("promptLogprobs", pp);
    }
    return o;
}

// NativeBinding.buildInfo().
inline Napi::Object build_info_to_js(Napi::Env env, const char * llama_commit, const char * variant, bool overlap_supported) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("llamaCommit", llama_commit);
    o.Set("system", llama_print_system_info());
    o.Set("variant", variant);
    o.Set("overlapSupported", overlap_supported);
    return o;
}

// The model's shape and metadata (NativeModelInfo). strtod, not stod: the wasm build has no
// C++ exceptions, and a malformed count should read as 0, not abort.
inline Napi::Object model_info_to_js(Napi::Env env, const llama_model * m) {
    Napi::Object o = Napi::Object::New(env);
    char buf[1024];
    auto meta = [&](const char * key) -> std::string {
        const int32_t n = llama_model_meta_val_str(m, key, buf, sizeof(buf));
        return n >= 0 ? std::string(buf) : std::string();
    };
    const std::string arch = meta("general.architecture");
    auto meta_int = [&](const std::string & key) -> double {
        const std::string v = meta(key.c_str());
        return v.empty() ? 0.0 : std::strtod(v.c_str(), nullptr);
    };
    llama_model_desc(m, buf, sizeof(buf));
    o.Set("architecture", arch);
    o.Set("name", meta("general.name"));
    o.Set("description", std::string(buf));
    o.Set("nParams", (double) llama_model_n_params(m));
    o.Set("sizeBytes", (double) llama_model_size(m));
    o.Set("nCtxTrain", llama_model_n_ctx_train(m));
    o.Set("nEmbd", llama_model_n_embd(m));
    o.Set("nLayer", llama_model_n_layer(m));
    o.Set("nHead", llama_model_n_head(m));
    o.Set("nHeadKv", llama_model_n_head_kv(m));
    o.Set("nVocab", llama_vocab_n_tokens(llama_model_get_vocab(m)));
    o.Set("nExpert", meta_int(arch + ".expert_count"));
    o.Set("nExpertUsed", meta_int(arch + ".expert_used_count"));
    const char * tmpl = llama_model_chat_template(m, nullptr);
    o.Set("chatTemplate", tmpl ? Napi::Value(Napi::String::New(env, tmpl)) : env.Null());
    Napi::Object all = Napi::Object::New(env);
    const int32_t n = llama_model_meta_count(m);
    std::vector<char> val(1 << 16);
    for (int32_t i = 0; i < n; i++) {
        if (llama_model_meta_key_by_index(m, i, buf, sizeof(buf)) < 0) continue;
        if (llama_model_meta_val_str_by_index(m, i, val.data(), val.size()) < 0) continue;
        all.Set(buf, std::string(val.data()));
    }
    o.Set("meta", all);
    return o;
}

}  // namespace bmoe
