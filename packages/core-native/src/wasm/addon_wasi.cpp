// The wasm32-wasi build of the addon (src/wasm/CMakeLists.txt): the same JavaScript interface as
// src/addon/ (binding/types.ts), for resident models only, on one thread.
//
// What differs from the native addon, and why:
// - No threads in this toolchain (Debian's wasi-libc and wasm32 libc++): loadModel and generate run
//   synchronously inside the call and return settled promises; generate calls onToken for every
//   token before it returns, so abort() can only stop the next call.
// - Resident only: the file is read into wasm memory (no mmap, no O_DIRECT, no memfd), so a model
//   must fit in wasm32's 4 GiB address space; `stream` is refused with a one-line error, and
//   streamInfo() is null. llama.cpp's lazy tensor reads are off (their 4 GiB threshold wraps on wasm32).
// - No C++ exception runtime: errors this file can see are returned as JS errors; an exception
//   thrown inside llama.cpp aborts the call (a trap; src/wasm/cxa_stubs.cpp prints its message).
// - Chat formatting uses llama.cpp's built-in template matcher (llama_chat_apply_template), not the
//   Jinja engine of llama.cpp's common library, which the wasm build does not include.
#define NAPI_DISABLE_CPP_EXCEPTIONS
#include <napi.h>
#include <emnapi.h>

#include "addon/js_objects.h"
#include "addon/params.h"
#include "addon/surface.h"
#include "bmoe/runtime/tokenize.h"
#include "bmoe/runtime/generator.h"

#include "llama.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace bmoe {

#ifndef BMOE_LLAMA_COMMIT
#define BMOE_LLAMA_COMMIT "unknown"
#endif

namespace {

// Errors go to JS as pending exceptions or rejected promises (no C++ exceptions here).
void throw_js(Napi::Env env, const std::string & msg) {
    Napi::Error::New(env, msg).ThrowAsJavaScriptException();
}

struct model_holder {
    llama_model * model = nullptr;
    ~model_holder() {
        if (model) llama_model_free(model);
    }
};

// A typed array made here lives in JS memory; what C++ wrote through Data() went to a copy in wasm
// memory (emnapi): copy it over to the JS side.
template <class T> T synced(Napi::Env env, T arr) {
    napi_value v = arr;
    emnapi_sync_memory(env, false, &v, 0, NAPI_AUTO_LENGTH);
    return arr;
}

struct emnapi_sync {
    template <class T> T operator()(Napi::Env env, T arr) const { return synced(env, arr); }
};

Napi::Promise resolved(Napi::Env env, Napi::Value v) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Resolve(v);
    return d.Promise();
}

Napi::Promise rejected(Napi::Env env, const std::string & msg) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(Napi::Error::New(env, msg).Value());
    return d.Promise();
}

// ---- Context ------------------------------------------------------------------------------------

class context_wrap : public Napi::ObjectWrap<context_wrap> {
  public:
    static Napi::FunctionReference * constructor;
    std::shared_ptr<model_holder> model;
    llama_context *               ctx = nullptr;
    std::unique_ptr<generator>    gen;
    generation *                  running = nullptr;  // while generate() runs (abort from onToken)

    explicit context_wrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<context_wrap>(info) {}
    ~context_wrap() override { free_context(); }

    void free_context() {
        gen.reset();
        if (ctx) llama_free(ctx);
        ctx = nullptr;
        model.reset();
    }

    Napi::Value generate(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        if (!ctx) return rejected(env, "the context is closed");
        if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
            return rejected(env, "generate(request, onToken): request must be an object and onToken a function");
        }
        Napi::Function on_token = info[1].As<Napi::Function>();
        js_reader r;
        generate_request req = read_generate_request(r, info[0].As<Napi::Object>());
        if (!r.ok()) return rejected(env, r.error);
        bool js_failed = false;
        // The generator reports its own failures by throwing, which this build cannot catch;
        // its inputs are checked above and by the engine, and an empty prompt is refused here.
        if (req.tokens.empty()) return rejected(env, "generate: the prompt has no tokens");
        if (req.seq != 0) return rejected(env, "generate: seq " + std::to_string(req.seq) + " is not a sequence of this context (0..0)");
        if (!req.sampling.grammar.gbnf.empty()) return rejected(env, "generate: grammars need the native addon (the wasm32-wasi build has no grammar support)");
        generation g;
        g.req      = std::move(req);
        // onToken(piece, eog, values, extras), as the native addon calls it; `values` is one
        // array for the generation, filled before each call.
        Napi::Float64Array values = Napi::Float64Array::New(env, token_value_count);
        g.on_token = [&](token_event && ev) {
            if (js_failed) return;
            token_values(ev, values.Data());
            on_token.Call({ token_piece_to_js(env, ev, emnapi_sync{}), Napi::Boolean::New(env, ev.is_eog), synced(env, values),
                            token_extras_to_js(env, ev, emnapi_sync{}) });
            if (env.IsExceptionPending()) {
                js_failed = true;
                g.abort.store(true);
            }
        };
        running = &g;
        gen->start(g);
        const std::vector<generation *> one{ &g };
        while (!g.done) gen->step(one);
        running = nullptr;
        if (js_failed) {
            Napi::Error e = env.GetAndClearPendingException();
            auto d = Napi::Promise::Deferred::New(env);
            d.Reject(e.Value());
            return d.Promise();
        }
        if (!g.error.empty()) return rejected(env, g.error);
        return resolved(env, generate_result_to_js(env, g.result));
    }

    Napi::Value abort(const Napi::CallbackInfo & info) {
        if (running) running->abort.store(true);
        return info.Env().Undefined();
    }
    Napi::Value reset(const Napi::CallbackInfo & info) {
        if (gen) gen->reset(-1);
        return info.Env().Undefined();
    }
    Napi::Value cached_tokens(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const size_t n = gen ? gen->cached[0].size() : 0;
        Napi::Int32Array out = Napi::Int32Array::New(env, n);
        if (n > 0) std::copy(gen->cached[0].begin(), gen->cached[0].end(), out.Data());
        return out;
    }
    // KV state files are written and read by the native addon only (this build cannot catch the
    // errors a file brings).
    Napi::Value save_state(const Napi::CallbackInfo & info) {
        return rejected(info.Env(), "saveState: KV state files need the native addon (bmoe native build)");
    }
    Napi::Value load_state(const Napi::CallbackInfo & info) {
        return rejected(info.Env(), "loadState: KV state files need the native addon (bmoe native build)");
    }
    Napi::Value state_meta(const Napi::CallbackInfo & info) {
        throw_js(info.Env(), "stateMeta: KV state files need the native addon (bmoe native build)");
        return info.Env().Undefined();
    }
    Napi::Value embed(const Napi::CallbackInfo & info) {
        throw_js(info.Env(), "embed: embeddings need the native addon (bmoe native build)");
        return info.Env().Undefined();
    }
    Napi::Value close(const Napi::CallbackInfo & info) {
        free_context();
        return info.Env().Undefined();
    }
};
Napi::FunctionReference * context_wrap::constructor = nullptr;

// ---- Model --------------------------------------------------------------------------------------

class model_wrap : public Napi::ObjectWrap<model_wrap> {
  public:
    static Napi::FunctionReference * constructor;
    std::shared_ptr<model_holder> state;

    // No chat layer here (prepareChat, parseChat, jsonSchemaToGrammar need llama.cpp's common library).
    static void add_methods(std::vector<Napi::ClassPropertyDescriptor<model_wrap>> &) {}

    explicit model_wrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<model_wrap>(info) {}

    const llama_model * live(Napi::Env env) {
        if (!state) {
            Napi::Error::New(env, "the model is closed").ThrowAsJavaScriptException();
            return nullptr;
        }
        return state->model;
    }

    Napi::Value info(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const llama_model * m = live(env);
        if (!m) return env.Undefined();
        return model_info_to_js(env, m);
    }

    Napi::Value tokenize(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const llama_model * m = live(env);
        if (!m) return env.Undefined();
        if (info.Length() < 1 || !info[0].IsString()) {
            Napi::TypeError::New(env, "tokenize(text, addSpecial, parseSpecial): text must be a string").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        const bool add_special   = info.Length() > 1 && info[1].ToBoolean().Value();
        const bool parse_special = info.Length() > 2 && info[2].ToBoolean().Value();
        const std::vector<llama_token> toks = tokenize_text(llama_model_get_vocab(m), info[0].As<Napi::String>().Utf8Value(), add_special, parse_special);
        Napi::Int32Array out = Napi::Int32Array::New(env, toks.size());
        std::copy(toks.begin(), toks.end(), out.Data());
        return synced(env, out);
    }

    Napi::Value detokenize(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const llama_model * m = live(env);
        if (!m) return env.Undefined();
        if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
            Napi::TypeError::New(env, "detokenize(tokens): tokens must be an Int32Array").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        Napi::Int32Array toks = info[0].As<Napi::Int32Array>();
        const std::string out = detokenize_text(llama_model_get_vocab(m), toks.Data(), toks.ElementLength());
        return Napi::String::New(env, out);
    }

    // llama.cpp's built-in template matcher (no Jinja in this build); false when it does not know
    // the model's template.
    static bool format_chat(const llama_model * m, const std::vector<chat_message> & in, const chat_format_options & f, std::string & out) {
        std::vector<llama_chat_message> msgs;
        for (const chat_message & c : in) msgs.push_back({ c.role.c_str(), c.content.c_str() });
        const char * tmpl = f.chatml ? "chatml" : llama_model_chat_template(m, nullptr);
        if (!tmpl) tmpl = "chatml";
        std::vector<char> buf(4096);
        int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), f.add_assistant, buf.data(), (int32_t) buf.size());
        if (n > (int32_t) buf.size()) {
            buf.resize((size_t) n);
            n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), f.add_assistant, buf.data(), (int32_t) buf.size());
        }
        if (n < 0) return false;
        out.assign(buf.data(), (size_t) n);
        return true;
    }

    static constexpr const char * NO_TEMPLATE =
        "chat template: this model's template is not one llama.cpp recognises without Jinja (the wasm32-wasi build has no Jinja); use chatml";

    Napi::Value apply_chat_template(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const llama_model * m = live(env);
        if (!m) return env.Undefined();
        js_reader r;
        const std::vector<chat_message> in = read_chat_messages(r, info.Length() > 0 ? info[0] : env.Undefined());
        const chat_format_options f = info.Length() > 1 && info[1].IsObject() ? read_chat_format(r, info[1].As<Napi::Object>()) : chat_format_options{};
        std::string text;
        if (r.ok() && !format_chat(m, in, f, text)) r.fail(NO_TEMPLATE);
        if (!r.ok()) {
            throw_js(env, r.error);
            return env.Undefined();
        }
        return Napi::String::New(env, text);
    }

    // Synchronous here (no threads): the template and the tokenizer run inside the call.
    Napi::Value prepare(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        if (!state) return rejected(env, "the model is closed");
        if (info.Length() < 1 || !info[0].IsObject()) return rejected(env, "prepare(input) must be an object");
        Napi::Object in = info[0].As<Napi::Object>();
        const llama_vocab * vocab = llama_model_get_vocab(state->model);
        std::string text;
        if (in.Get("text").IsString()) {
            text = in.Get("text").As<Napi::String>().Utf8Value();
        } else {
            js_reader r;
            const std::vector<chat_message> msgs = read_chat_messages(r, in.Get("messages"));
            const chat_format_options f = read_chat_format(r, in);
            if (r.ok() && !format_chat(state->model, msgs, f, text)) r.fail(NO_TEMPLATE);
            if (!r.ok()) return rejected(env, r.error);
        }
        std::vector<llama_token> toks = tokenize_text(vocab, text, true, true);
        const llama_token bos = llama_vocab_bos(vocab);
        if (!in.Get("text").IsString() && bos != LLAMA_TOKEN_NULL && toks.size() >= 2 && toks[0] == bos && toks[1] == bos) toks.erase(toks.begin());
        Napi::Int32Array out = Napi::Int32Array::New(env, toks.size());
        std::copy(toks.begin(), toks.end(), out.Data());
        return resolved(env, synced(env, out));
    }

    // The model was read into wasm memory, not mapped: a changed file cannot touch it.
    Napi::Value file_status(const Napi::CallbackInfo & info) { return Napi::String::New(info.Env(), ""); }

    Napi::Value create_context(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        if (!live(env)) return env.Undefined();
        if (info.Length() < 1 || !info[0].IsObject()) {
            Napi::TypeError::New(env, "createContext(params) must be an object").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        js_reader r;
        const context_params p = read_context_params(r, info[0].As<Napi::Object>());
        if (!r.ok()) {
            throw_js(env, r.error);
            return env.Undefined();
        }
        if (p.n_seq != 1) {
            throw_js(env, "createContext: nSeq " + std::to_string(p.n_seq) + " needs the native addon (this build decodes one sequence)");
            return env.Undefined();
        }
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx           = p.n_ctx;
        cp.n_batch         = p.n_batch;
        cp.n_ubatch        = std::min(p.n_ubatch, p.n_batch);
        cp.n_threads       = 1;  // no threads in this build
        cp.n_threads_batch = 1;
        cp.no_perf         = true;
        llama_context * ctx = llama_init_from_model(state->model, cp);
        if (!ctx) {
            Napi::Error::New(env, "could not create a context (n_ctx " + std::to_string(cp.n_ctx) + ")").ThrowAsJavaScriptException();
            return env.Undefined();
        }
        Napi::Object obj = context_wrap::constructor->New({});
        context_wrap * c = context_wrap::Unwrap(obj);
        c->model       = state;
        c->ctx         = ctx;
        c->gen         = std::make_unique<generator>();
        c->gen->ctx     = ctx;
        c->gen->vocab   = llama_model_get_vocab(state->model);
        c->gen->n_batch = (int32_t) cp.n_batch;
        c->gen->attach();
        return obj;
    }

    Napi::Value close(const Napi::CallbackInfo & info) {
        state.reset();
        return info.Env().Undefined();
    }
    Napi::Value stream_info(const Napi::CallbackInfo & info) { return info.Env().Null(); }
};
Napi::FunctionReference * model_wrap::constructor = nullptr;

// ---- Module -------------------------------------------------------------------------------------

Napi::Value load_model(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) return rejected(env, "loadModel(params) must be an object");
    Napi::Object o = info[0].As<Napi::Object>();
    js_reader r;
    const std::string path = r.string(o, "path", "");
    const bool        repack = r.boolean(o, contract::model::repack);
    std::vector<llama_model_kv_override> kv = read_kv_overrides(r, o.Get("kvOverrides"));
    if (!r.ok()) return rejected(env, r.error);
    if (path.empty()) return rejected(env, "path must be a non-empty string");
    if (o.Get("stream").IsObject()) {
        return rejected(env, path + ": expert streaming (--moe-stream) needs a native build; the wasm32-wasi build runs resident models only");
    }
    // No repacked layouts in this build (ggml repacks for x86/arm SIMD only): repack changes nothing.
    (void) repack;
    FILE * f = std::fopen(path.c_str(), "rb");
    if (!f) return rejected(env, path + ": " + std::strerror(errno));
    std::fclose(f);

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers    = 0;
    mp.load_mode       = LLAMA_LOAD_MODE_NONE; // read into memory: no mmap here
    mp.lazy_mode       = LLAMA_LAZY_MODE_OFF;  // its 4 GiB threshold wraps to 0 on wasm32
    mp.use_extra_bufts = false;                // as the native build's default (-nr)
    if (!kv.empty()) {
        kv.emplace_back();
        kv.back().key[0] = '\0';
        mp.kv_overrides = kv.data();
    }
    llama_model * model = llama_model_load_from_file(path.c_str(), mp);
    if (!model) return rejected(env, path + ": llama.cpp could not load the model");
    auto holder = std::make_shared<model_holder>();
    holder->model = model;
    Napi::Object obj = model_wrap::constructor->New({});
    model_wrap::Unwrap(obj)->state = holder;
    return resolved(env, obj);
}

Napi::Value build_info(const Napi::CallbackInfo & info) {
    return build_info_to_js(info.Env(), BMOE_LLAMA_COMMIT, "wasm32-wasi", false);
}

Napi::Value read_ceiling(const Napi::CallbackInfo & info) {
    Napi::Error::New(info.Env(), "readCeiling needs O_DIRECT and threads: not available in the wasm32-wasi build").ThrowAsJavaScriptException();
    return info.Env().Undefined();
}

// llama.cpp's log goes to stderr only with BMOE_LLAMA_LOG=1, as in the native build.
void quiet_log(enum ggml_log_level level, const char * text, void *) {
    static const bool on = std::getenv("BMOE_LLAMA_LOG") != nullptr;
    if (on || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    return define_module<model_wrap, context_wrap>(env, exports, load_model, build_info, read_ceiling);
}

} // namespace

}  // namespace bmoe

BMOE_NODE_API_MODULE(bmoe::init)
