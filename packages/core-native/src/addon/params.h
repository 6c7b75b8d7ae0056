// Reading the addon's parameter objects (binding/types.ts) into the runtime's structs, for both
// addons. Exception-free on purpose: the wasm32-wasi build has no C++ exception runtime, so a
// reader collects the first problem (naming the field) and each addon reports it its own way —
// the native one throws it as a JS exception, the wasm one rejects or sets a pending exception.
// Header-only: each addon compiles it against its own Node-API.
#pragma once

#include <napi.h>

#include "bmoe/contract/params.h"
#include "bmoe/runtime/chat_format.h"
#include "bmoe/runtime/generator.h"
#include "bmoe/stream/stream_config.h"

#include "llama.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace bmoe {

struct js_reader {
    std::string error;  // the first problem, "" while none

    bool ok() const { return error.empty(); }
    void fail(const std::string & msg) {
        if (error.empty()) error = msg;
    }
    double number(const Napi::Object & o, const char * key, double def) {
        Napi::Value v = o.Get(key);
        if (v.IsUndefined() || v.IsNull()) return def;
        if (!v.IsNumber()) {
            fail(std::string(key) + " must be a number");
            return def;
        }
        return v.As<Napi::Number>().DoubleValue();
    }
    int64_t integer(const Napi::Object & o, const char * key, int64_t def, int64_t lo, int64_t hi) {
        const double d = number(o, key, (double) def);
        if (d != (double) (int64_t) d || d < (double) lo || d > (double) hi) {
            fail(std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(d));
            return def;
        }
        return (int64_t) d;
    }
    bool boolean(const Napi::Object & o, const char * key, bool def) {
        Napi::Value v = o.Get(key);
        if (v.IsUndefined() || v.IsNull()) return def;
        if (!v.IsBoolean()) {
            fail(std::string(key) + " must be a boolean");
            return def;
        }
        return v.As<Napi::Boolean>().Value();
    }
    std::string string(const Napi::Object & o, const char * key, const std::string & def) {
        Napi::Value v = o.Get(key);
        if (v.IsUndefined() || v.IsNull()) return def;
        if (!v.IsString()) {
            fail(std::string(key) + " must be a string");
            return def;
        }
        return v.As<Napi::String>().Utf8Value();
    }

    // The contract's fields (include/bmoe/contract/params.h): key, default and range in one place.
    int64_t integer(const Napi::Object & o, const contract::int_field & f) { return integer(o, f.key, f.def, f.min, f.max); }
    double  number(const Napi::Object & o, const contract::real_field & f) { return number(o, f.key, f.def); }
    bool    boolean(const Napi::Object & o, const contract::bool_field & f) { return boolean(o, f.key, f.def); }
    std::string text(const Napi::Object & o, const contract::text_field & f) {
        std::string s = string(o, f.key, f.def);
        if ((int64_t) s.size() > f.max_bytes) {
            fail(std::string(f.key) + " must be at most " + std::to_string(f.max_bytes) + " bytes, got " + std::to_string(s.size()));
            return f.def;
        }
        return s;
    }
    // A finite number in [min, max] (penalties: llama.cpp aborts on NaN and infinities).
    double finite(const Napi::Object & o, const contract::number_field & f) {
        const double d = number(o, f.key, f.def);
        if (!(d >= f.min && d <= f.max)) {
            fail(std::string(f.key) + " must be a number in [" + std::to_string(f.min) + ", " + std::to_string(f.max) + "], got " + std::to_string(d));
            return f.def;
        }
        return d;
    }
    // The index of the value among f.values (the default's when absent).
    int one_of(const Napi::Object & o, const contract::enum_field & f) {
        const std::string v = string(o, f.key, f.def);
        std::string list;
        for (int i = 0; i < f.n_values; i++) {
            if (v == f.values[i]) return i;
            list += (i == 0 ? "" : i + 1 == f.n_values ? " or " : ", ") + std::string(f.values[i]);
        }
        fail(std::string(f.key) + " must be " + list + ", got " + v);
        for (int i = 0; i < f.n_values; i++) {
            if (std::strcmp(f.def, f.values[i]) == 0) return i;
        }
        return 0;
    }
    // true / false force a mode; the string "auto", or absent, leaves it automatic.
    mode_setting tri(const Napi::Object & o, const contract::tri_field & f) {
        Napi::Value v = o.Get(f.key);
        if (v.IsUndefined() || (v.IsString() && v.As<Napi::String>().Utf8Value() == "auto")) return mode_setting::automatic;
        return boolean(o, f.key, false) ? mode_setting::on : mode_setting::off;
    }
};

// Calls fn(object, index) for each item of an array of objects; a non-object item fails the
// reader naming it (`what[i]`). Absent or not an array: nothing.
template <class Fn> void each_object(js_reader & r, const Napi::Value & v, const std::string & what, Fn && fn) {
    if (!v.IsArray()) return;
    Napi::Array arr = v.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length() && r.ok(); i++) {
        Napi::Value item = arr.Get(i);
        if (!item.IsObject()) {
            r.fail(what + "[" + std::to_string(i) + "] must be an object");
            return;
        }
        fn(item.As<Napi::Object>(), i);
    }
}

// NativeContextParams.
struct context_params {
    uint32_t n_ctx    = (uint32_t) contract::context::n_ctx.def;
    uint32_t n_batch  = (uint32_t) contract::context::n_batch.def;
    uint32_t n_ubatch = (uint32_t) contract::context::n_ubatch.def;
    int32_t  threads  = (int32_t) contract::context::threads.def;
    uint32_t n_seq    = (uint32_t) contract::context::n_seq.def;
    bool     embeddings = contract::context::embeddings.def;
    int      pooling    = 0;  // an index into contract::context::pooling.values
};

inline context_params read_context_params(js_reader & r, const Napi::Object & p) {
    namespace k = contract::context;
    context_params cp;
    cp.n_ctx    = (uint32_t) r.integer(p, k::n_ctx);
    cp.n_batch  = (uint32_t) r.integer(p, k::n_batch);
    cp.n_ubatch = (uint32_t) r.integer(p, k::n_ubatch);
    cp.threads  = (int32_t) r.integer(p, k::threads);
    cp.n_seq    = (uint32_t) r.integer(p, k::n_seq);
    cp.embeddings = r.boolean(p, k::embeddings);
    cp.pooling    = r.one_of(p, k::pooling);
    return cp;
}

// NativeSampling.
inline sampling_params read_sampling(js_reader & r, const Napi::Object & s) {
    namespace k = contract::sampling;
    sampling_params p;
    p.temperature       = (float) r.number(s, k::temperature);
    p.top_k             = (int32_t) r.integer(s, k::top_k);
    p.top_p             = (float) r.number(s, k::top_p);
    p.seed              = (uint32_t) r.integer(s, k::seed);
    p.min_p             = (float) r.finite(s, k::min_p);
    p.repeat_penalty    = (float) r.finite(s, k::repeat_penalty);
    p.repeat_last_n     = (int32_t) r.integer(s, k::repeat_last_n);
    p.presence_penalty  = (float) r.finite(s, k::presence_penalty);
    p.frequency_penalty = (float) r.finite(s, k::frequency_penalty);
    p.reasoning_budget  = (int32_t) r.integer(s, k::reasoning_budget);
    p.reasoning_budget_message = r.text(s, k::reasoning_budget_message);
    each_object(r, s.Get("logitBias"), "logitBias", [&](const Napi::Object & e, uint32_t) {
        llama_logit_bias b;
        b.token = (llama_token) r.integer(e, contract::logit_bias::token);
        b.bias  = (float) r.finite(e, contract::logit_bias::bias);
        p.logit_bias.push_back(b);
    });
    return p;
}

// NativeGrammar.
inline grammar_spec read_grammar(js_reader & r, const Napi::Object & g) {
    grammar_spec spec;
    spec.gbnf = r.string(g, "gbnf", "");
    const std::string kind = r.string(g, "kind", "user");
    if (kind == "user") spec.kind = grammar_spec::user;
    else if (kind == "output") spec.kind = grammar_spec::output;
    else if (kind == "tools") spec.kind = grammar_spec::tools;
    else r.fail("grammar.kind must be user, output or tools, got " + kind);
    spec.lazy              = r.boolean(g, "lazy", false);
    spec.generation_prompt = r.string(g, "generationPrompt", "");
    spec.reasoning_start   = r.string(g, "reasoningStart", "");
    spec.forces_answer     = r.boolean(g, "forcesAnswer", false);
    Napi::Value ends = g.Get("reasoningEnds");
    if (ends.IsArray()) {
        Napi::Array a = ends.As<Napi::Array>();
        for (uint32_t i = 0; i < a.Length() && i < 8; i++) {
            Napi::Value e = a.Get(i);
            if (!e.IsString()) { r.fail("grammar.reasoningEnds must be strings"); break; }
            spec.reasoning_ends.push_back(e.As<Napi::String>().Utf8Value());
        }
    }
    each_object(r, g.Get("triggers"), "grammar.triggers", [&](const Napi::Object & e, uint32_t i) {
        grammar_trigger t;
        const std::string type = r.string(e, "type", "word");
        if (type == "token") t.kind = grammar_trigger::token;
        else if (type == "word") t.kind = grammar_trigger::word;
        else if (type == "pattern") t.kind = grammar_trigger::pattern;
        else if (type == "pattern_full") t.kind = grammar_trigger::pattern_full;
        else r.fail("grammar.triggers[" + std::to_string(i) + "].type must be token, word, pattern or pattern_full");
        t.value = r.string(e, "value", "");
        t.id    = (llama_token) r.integer(e, "token", LLAMA_TOKEN_NULL, LLAMA_TOKEN_NULL, INT32_MAX);
        spec.triggers.push_back(t);
    });
    return spec;
}

// NativeGenerateRequest: tokens, maxTokens, logits, contextShift, sampling, grammar.
inline generate_request read_generate_request(js_reader & r, const Napi::Object & o) {
    generate_request req;
    Napi::Value tv = o.Get("tokens");
    if (!tv.IsTypedArray() || tv.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
        r.fail("tokens must be an Int32Array");
        return req;
    }
    Napi::Int32Array toks = tv.As<Napi::Int32Array>();
    req.tokens.assign(toks.Data(), toks.Data() + toks.ElementLength());
    namespace k = contract::generate;
    req.seq             = (int32_t) r.integer(o, k::seq);
    req.max_tokens      = (int32_t) r.integer(o, k::max_tokens);
    req.want_logits     = r.boolean(o, k::want_logits);
    req.n_probs         = (int32_t) r.integer(o, k::n_probs);
    req.prompt_logprobs = r.boolean(o, k::prompt_logprobs);
    req.context_shift   = r.boolean(o, k::context_shift);
    req.background      = r.boolean(o, k::background);
    req.grammar_step_ms = (int32_t) r.integer(o, k::grammar_step_ms);
    Napi::Value sv = o.Get("sampling");
    if (sv.IsObject()) req.sampling = read_sampling(r, sv.As<Napi::Object>());
    Napi::Value gv = o.Get("grammar");
    if (gv.IsObject()) req.sampling.grammar = read_grammar(r, gv.As<Napi::Object>());
    // A forced answer (tool_choice required, a named function, a JSON schema) gets a bounded
    // reasoning block by default, so the call or the JSON comes within maxTokens.
    req.sampling.reasoning_budget = reasoning_budget_default(req.sampling, req.max_tokens);
    return req;
}

// NativeKvOverride[]: llama.cpp's --override-kv entries (the list is not yet terminated).
inline std::vector<llama_model_kv_override> read_kv_overrides(js_reader & r, const Napi::Value & v) {
    std::vector<llama_model_kv_override> out;
    each_object(r, v, "kvOverrides", [&](const Napi::Object & e, uint32_t i) {
        const std::string at = "kvOverrides[" + std::to_string(i) + "]";
        llama_model_kv_override ov{};
        const std::string key  = r.string(e, "key", "");
        const std::string type = r.string(e, "type", "");
        if (key.empty() || key.size() >= sizeof(ov.key)) {
            r.fail(at + ".key must be 1..127 characters");
            return;
        }
        std::strncpy(ov.key, key.c_str(), sizeof(ov.key) - 1);
        if (type == "int") {
            ov.tag     = LLAMA_KV_OVERRIDE_TYPE_INT;
            ov.val_i64 = r.integer(e, "value", 0, INT64_MIN / 2, INT64_MAX / 2);
        } else if (type == "float") {
            ov.tag     = LLAMA_KV_OVERRIDE_TYPE_FLOAT;
            ov.val_f64 = r.number(e, "value", 0);
        } else if (type == "bool") {
            ov.tag      = LLAMA_KV_OVERRIDE_TYPE_BOOL;
            ov.val_bool = r.boolean(e, "value", false);
        } else if (type == "str") {
            ov.tag = LLAMA_KV_OVERRIDE_TYPE_STR;
            const std::string str = r.string(e, "value", "");
            if (str.size() >= sizeof(ov.val_str)) {
                r.fail(at + ".value is too long");
                return;
            }
            std::strncpy(ov.val_str, str.c_str(), sizeof(ov.val_str) - 1);
        } else {
            r.fail(at + ".type must be int, float, bool or str");
            return;
        }
        out.push_back(ov);
    });
    return out;
}

// NativeChatMessage[].
inline std::vector<chat_message> read_chat_messages(js_reader & r, const Napi::Value & v) {
    std::vector<chat_message> out;
    if (!v.IsArray()) {
        r.fail("messages must be an array");
        return out;
    }
    Napi::Array arr = v.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length() && r.ok(); i++) {
        Napi::Value m = arr.Get(i);
        if (!m.IsObject()) {
            r.fail("messages[" + std::to_string(i) + "] must be an object");
            break;
        }
        out.push_back({ r.string(m.As<Napi::Object>(), "role", ""), r.string(m.As<Napi::Object>(), "content", "") });
    }
    return out;
}

// The chat formatting options of applyChatTemplate / prepare.
inline chat_format_options read_chat_format(js_reader & r, const Napi::Object & o) {
    namespace k = contract::chat_format;
    chat_format_options f;
    f.chatml        = r.boolean(o, k::chatml);
    f.think         = r.boolean(o, k::think);
    f.add_assistant = r.boolean(o, k::add_assistant);
    return f;
}

// NativeStreamParams (present = streaming on); stream_config_validate checks the combination
// once, in model_state_load.
inline stream_config read_stream_config(js_reader & r, const Napi::Object & s) {
    namespace k = contract::stream;
    stream_config c;
    c.enabled = true;
    Napi::Value cm = s.Get(k::cache_mb.key);
    if (cm.IsString() && cm.As<Napi::String>().Utf8Value() == "auto") {
        c.cache_auto = true;
    } else {
        c.cache_mb = (uint64_t) r.integer(s, k::cache_mb);
    }
    c.cache_ceil_mb = (uint64_t) r.integer(s, k::cache_ceil_mb);
    c.io_threads    = (int32_t) r.integer(s, k::io_threads);
    c.overlap       = r.tri(s, k::overlap);
    c.route_ahead   = r.tri(s, k::route_ahead);
    c.prefetch      = (int32_t) r.integer(s, k::prefetch);
    c.odirect       = r.boolean(s, k::odirect);
    c.force_cache   = r.boolean(s, k::force_cache);
    c.dense_weights = r.one_of(s, k::dense_weights) == 1 ? dense_weights_mode::anon : dense_weights_mode::mmap;
    return c;
}

}  // namespace bmoe
