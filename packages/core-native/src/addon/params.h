// Reading the addon's parameter objects (binding/types.ts) into the runtime's structs, for both
// addons. Exception-free on purpose: the wasm32-wasi build has no C++ exception runtime, so a
// reader collects the first problem (naming the field) and each addon reports it its own way —
// the native one throws it as a JS exception, the wasm one rejects or sets a pending exception.
// Header-only: each addon compiles it against its own Node-API.
#pragma once

#include <napi.h>

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
    uint32_t n_ctx    = 4096;
    uint32_t n_batch  = 512;
    uint32_t n_ubatch = 512;
    int32_t  threads  = 4;
};

inline context_params read_context_params(js_reader & r, const Napi::Object & p) {
    context_params cp;
    cp.n_ctx    = (uint32_t) r.integer(p, "nCtx", 4096, 16, 1 << 20);
    cp.n_batch  = (uint32_t) r.integer(p, "nBatch", 512, 1, 1 << 16);
    cp.n_ubatch = (uint32_t) r.integer(p, "nUbatch", 512, 1, 1 << 16);
    cp.threads  = (int32_t) r.integer(p, "threads", 4, 1, 1024);
    return cp;
}

// A finite number in [lo, hi] (penalties: llama.cpp aborts on NaN and infinities).
inline float finite_in(js_reader & r, const Napi::Object & o, const char * key, double def, double lo, double hi) {
    const double d = r.number(o, key, def);
    if (!(d >= lo && d <= hi)) {
        r.fail(std::string(key) + " must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(d));
        return (float) def;
    }
    return (float) d;
}

// NativeSampling. Bounds are the option table's (@bmoe/engine), tested against these readers.
inline sampling_params read_sampling(js_reader & r, const Napi::Object & s) {
    sampling_params p;
    p.temperature       = (float) r.number(s, "temperature", 0.0);
    p.top_k             = (int32_t) r.integer(s, "topK", 40, 0, 1 << 24);
    p.top_p             = (float) r.number(s, "topP", 0.95);
    p.seed              = (uint32_t) r.integer(s, "seed", 0, 0, 0xFFFFFFFFLL);
    p.min_p             = finite_in(r, s, "minP", 0.0, 0.0, 1.0);
    p.repeat_penalty    = finite_in(r, s, "repeatPenalty", 1.0, 1e-6, 1e6);
    p.repeat_last_n     = (int32_t) r.integer(s, "repeatLastN", 64, -1, 1 << 24);
    p.presence_penalty  = finite_in(r, s, "presencePenalty", 0.0, -1e6, 1e6);
    p.frequency_penalty = finite_in(r, s, "frequencyPenalty", 0.0, -1e6, 1e6);
    each_object(r, s.Get("logitBias"), "logitBias", [&](const Napi::Object & e, uint32_t) {
        llama_logit_bias b;
        b.token = (llama_token) r.integer(e, "token", 0, 0, INT32_MAX);
        b.bias  = finite_in(r, e, "bias", 0.0, -1e6, 1e6);
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
    req.max_tokens    = (int32_t) r.integer(o, "maxTokens", 256, 0, 1 << 24);
    req.want_logits   = r.boolean(o, "logits", false);
    req.context_shift = r.boolean(o, "contextShift", false);
    req.grammar_step_ms = (int32_t) r.integer(o, "grammarStepMs", 10000, 1, 600000);
    Napi::Value sv = o.Get("sampling");
    if (sv.IsObject()) req.sampling = read_sampling(r, sv.As<Napi::Object>());
    Napi::Value gv = o.Get("grammar");
    if (gv.IsObject()) req.sampling.grammar = read_grammar(r, gv.As<Napi::Object>());
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
    chat_format_options f;
    f.chatml        = r.boolean(o, "chatml", false);
    f.think         = r.boolean(o, "think", true);
    f.add_assistant = r.boolean(o, "addAssistant", true);
    return f;
}

// NativeStreamParams (present = streaming on). Bounds are the option table's (@bmoe/engine);
// stream_config_validate checks the combination once, in model_state_load.
inline stream_config read_stream_config(js_reader & r, const Napi::Object & s) {
    stream_config c;
    c.enabled = true;
    Napi::Value cm = s.Get("cacheMb");
    if (cm.IsString() && cm.As<Napi::String>().Utf8Value() == "auto") {
        c.cache_auto = true;
    } else {
        c.cache_mb = (uint64_t) r.integer(s, "cacheMb", 0, 0, 1ll << 24);
    }
    c.cache_ceil_mb = (uint64_t) r.integer(s, "cacheCeilMb", 0, 0, 1ll << 24);
    c.io_threads    = (int32_t) r.integer(s, "ioThreads", 4, 1, 64);
    // overlap, routeAhead: true / false force them; "auto" (or absent, the default) lets the
    // streamer measure (decode_choice.h).
    const auto setting = [&](const char * key) {
        Napi::Value v = s.Get(key);
        if (v.IsUndefined() || (v.IsString() && v.As<Napi::String>().Utf8Value() == "auto")) return mode_setting::automatic;
        return r.boolean(s, key, false) ? mode_setting::on : mode_setting::off;
    };
    c.overlap       = setting("overlap");
    c.route_ahead   = setting("routeAhead");
    c.prefetch      = (int32_t) r.integer(s, "prefetch", 0, 0, 64);
    c.odirect       = r.boolean(s, "odirect", true);
    c.force_cache   = r.boolean(s, "forceCache", false);
    const std::string dw = r.string(s, "denseWeights", "mmap");
    if (dw != "mmap" && dw != "anon") r.fail("denseWeights must be mmap or anon, got " + dw);
    c.dense_weights = dw == "anon" ? dense_weights_mode::anon : dense_weights_mode::mmap;
    return c;
}

}  // namespace bmoe
