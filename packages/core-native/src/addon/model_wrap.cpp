#include "model_wrap.h"

#include "args.h"
#include "context_wrap.h"
#include "js_objects.h"
#include "promise_worker.h"

#include "bmoe/runtime/chat_format.h"
#include "bmoe/runtime/prompt.h"
#include "bmoe/runtime/tokenize.h"
#include "bmoe/stream/streamer.h"

#include <algorithm>
#include <vector>

namespace bmoe {

Napi::FunctionReference * model_wrap::constructor = nullptr;

static Napi::Int32Array int32_array(Napi::Env env, const std::vector<llama_token> & v) {
    Napi::Int32Array out = Napi::Int32Array::New(env, v.size());
    std::copy(v.begin(), v.end(), out.Data());
    return out;
}


Napi::Object model_wrap::create(Napi::Env env, std::shared_ptr<model_state> st) {
    Napi::Object obj = constructor->New({});
    model_wrap::Unwrap(obj)->state = std::move(st);
    return obj;
}

model_wrap::model_wrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<model_wrap>(info) {}

model_state & model_wrap::live(Napi::Env env) {
    if (!state) {
        throw Napi::Error::New(env, "the model is closed");
    }
    return *state;
}

Napi::Value model_wrap::info(const Napi::CallbackInfo & info) {
    return model_info_to_js(info.Env(), live(info.Env()).model);
}

Napi::Value model_wrap::tokenize(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    const llama_vocab * vocab = llama_model_get_vocab(live(env).model);
    if (info.Length() < 1 || !info[0].IsString()) {
        throw Napi::TypeError::New(env, "tokenize(text, addSpecial, parseSpecial): text must be a string");
    }
    const bool add_special   = info.Length() > 1 && info[1].ToBoolean().Value();
    const bool parse_special = info.Length() > 2 && info[2].ToBoolean().Value();
    try {
        return int32_array(env, tokenize_text(vocab, info[0].As<Napi::String>().Utf8Value(), add_special, parse_special));
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
}

Napi::Value model_wrap::prepare(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    live(env);
    Napi::Object in = arg_object(info, 0, "prepare(input)");
    prompt_input p;
    Napi::Value text = in.Get("text");
    if (text.IsString()) {
        p.text = text.As<Napi::String>().Utf8Value();
    } else {
        js_reader r;
        p.is_chat  = true;
        p.messages = read_chat_messages(r, in.Get("messages"));
        p.format   = read_chat_format(r, in);
        throw_if_failed(env, r);
    }
    // Template + tokenize off the JS thread: tens of thousands of messages must not freeze the event loop.
    std::shared_ptr<model_state> st = state;
    return run_on_worker<std::vector<llama_token>>(
        env, [st, p = std::move(p)]() { return prompt_tokens(*st, p); },
        [](Napi::Env e, std::vector<llama_token> & toks) -> Napi::Value { return int32_array(e, toks); });
}

Napi::Value model_wrap::detokenize(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    const llama_vocab * vocab = llama_model_get_vocab(live(env).model);
    if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
        throw Napi::TypeError::New(env, "detokenize(tokens): tokens must be an Int32Array");
    }
    Napi::Int32Array toks = info[0].As<Napi::Int32Array>();
    const std::string out = detokenize_text(vocab, toks.Data(), toks.ElementLength());
    return Napi::String::New(env, out);
}

Napi::Value model_wrap::apply_chat_template(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    model_state & st = live(env);
    if (info.Length() < 1 || !info[0].IsArray()) {
        throw Napi::TypeError::New(env, "applyChatTemplate(messages, opts): messages must be an array");
    }
    js_reader r;
    const std::vector<chat_message> msgs = read_chat_messages(r, info[0]);
    const chat_format_options o = info.Length() > 1 && info[1].IsObject() ? read_chat_format(r, info[1].As<Napi::Object>()) : chat_format_options{};
    throw_if_failed(env, r);
    try {
        return Napi::String::New(env, chat_format(st, msgs, o));
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, std::string("chat template: ") + e.what());
    }
}

Napi::Value model_wrap::create_context(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    live(env);
    Napi::Object p = arg_object(info, 0, "createContext(params)");
    js_reader r;
    const context_params cp = read_context_params(r, p);
    throw_if_failed(env, r);
    return context_wrap::create(env, state, cp);
}

Napi::Value model_wrap::file_status(const Napi::CallbackInfo & info) {
    const model_state & st = live(info.Env());
    return Napi::String::New(info.Env(), st.file_check());
}

Napi::Value model_wrap::close(const Napi::CallbackInfo & info) {
    state.reset(); // contexts keep their own reference; the model is freed with the last one
    return info.Env().Undefined();
}

// A stream info value as JS: byte counts are numbers (exact below 2^53), lists are arrays.
static Napi::Value stream_info_value(Napi::Env env, uint64_t v) { return Napi::Number::New(env, (double) v); }
static Napi::Value stream_info_value(Napi::Env env, int32_t v) { return Napi::Number::New(env, v); }
static Napi::Value stream_info_value(Napi::Env env, double v) { return Napi::Number::New(env, v); }
static Napi::Value stream_info_value(Napi::Env env, bool v) { return Napi::Boolean::New(env, v); }
static Napi::Value stream_info_value(Napi::Env env, const std::string & v) { return Napi::String::New(env, v); }
static Napi::Value stream_info_value(Napi::Env env, const std::vector<stream_info::probe_arm> & arms) {
    Napi::Array a = Napi::Array::New(env, arms.size());
    for (size_t i = 0; i < arms.size(); i++) {
        Napi::Object o = Napi::Object::New(env);
#define BMOE_SET_ARM(type, member, key) o.Set(#key, stream_info_value(env, arms[i].member));
        BMOE_PROBE_ARM_FIELDS(BMOE_SET_ARM)
#undef BMOE_SET_ARM
        a.Set((uint32_t) i, o);
    }
    return a;
}

// NativeStreamInfo, expanded from the contract's list.
static Napi::Object stream_info_to_js(Napi::Env env, const stream_info & s) {
    Napi::Object o = Napi::Object::New(env);
#define BMOE_SET_INFO(type, member, key) o.Set(#key, stream_info_value(env, s.member));
    BMOE_STREAM_INFO_FIELDS(BMOE_SET_INFO)
#undef BMOE_SET_INFO
    return o;
}

Napi::Value model_wrap::stream_info(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    model_state & st = live(env);
    if (!st.stream) return env.Null();
    return stream_info_to_js(env, st.stream->info());
}

}  // namespace bmoe
