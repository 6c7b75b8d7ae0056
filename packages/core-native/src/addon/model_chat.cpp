// Model's chat layer (native addon only): prepareChat, parseChat, jsonSchemaToGrammar over
// runtime/chat_plan, which goes through llama.cpp's common chat code.
#include "model_wrap.h"

#include "args.h"
#include "media_handle.h"
#include "promise_worker.h"

#include "bmoe/limits/grammar_limits.h"
#include "bmoe/runtime/chat_plan.h"

#include <algorithm>
#include <stdexcept>

namespace bmoe {

namespace {

const char * trigger_type_name(grammar_trigger::kind_t k) {
    switch (k) {
        case grammar_trigger::token:        return "token";
        case grammar_trigger::word:         return "word";
        case grammar_trigger::pattern:      return "pattern";
        case grammar_trigger::pattern_full: return "pattern_full";
    }
    return "word";
}

const char * grammar_kind_name(grammar_spec::kind_t k) {
    return k == grammar_spec::output ? "output" : k == grammar_spec::tools ? "tools" : "user";
}

Napi::Array strings_to_js(Napi::Env env, const std::vector<std::string> & v) {
    Napi::Array a = Napi::Array::New(env, v.size());
    for (size_t i = 0; i < v.size(); i++) a.Set((uint32_t) i, v[i]);
    return a;
}

// NativeGrammar | null.
Napi::Value grammar_to_js(Napi::Env env, const grammar_spec & g) {
    // A thinking format's reasoning tags travel even without a grammar (the reasoning budget).
    if (g.gbnf.empty() && g.reasoning_start.empty()) return env.Null();
    Napi::Object o = Napi::Object::New(env);
    o.Set("gbnf", g.gbnf);
    o.Set("kind", grammar_kind_name(g.kind));
    o.Set("lazy", g.lazy);
    Napi::Array triggers = Napi::Array::New(env, g.triggers.size());
    for (size_t i = 0; i < g.triggers.size(); i++) {
        Napi::Object t = Napi::Object::New(env);
        t.Set("type", trigger_type_name(g.triggers[i].kind));
        t.Set("value", g.triggers[i].value);
        if (g.triggers[i].kind == grammar_trigger::token) t.Set("token", g.triggers[i].id);
        triggers.Set((uint32_t) i, t);
    }
    o.Set("triggers", triggers);
    o.Set("generationPrompt", g.generation_prompt);
    o.Set("reasoningStart", g.reasoning_start);
    o.Set("reasoningEnds", strings_to_js(env, g.reasoning_ends));
    o.Set("forcesAnswer", g.forces_answer);
    return o;
}

Napi::Object syntax_to_js(Napi::Env env, const chat_syntax & s) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("format", s.format);
    o.Set("formatName", s.format_name);
    o.Set("generationPrompt", s.generation_prompt);
    o.Set("parser", s.parser);
    o.Set("parseToolCalls", s.parse_tool_calls);
    return o;
}

chat_syntax read_syntax(js_reader & r, const Napi::Object & o) {
    chat_syntax s;
    s.format            = (int32_t) r.integer(o, "format", 0, 0, 1 << 16);
    s.format_name       = r.string(o, "formatName", "");
    s.generation_prompt = r.string(o, "generationPrompt", "");
    s.parser            = r.string(o, "parser", "");
    s.parse_tool_calls  = r.boolean(o, "parseToolCalls", false);
    return s;
}

chat_request read_chat_request(js_reader & r, const Napi::Object & o) {
    chat_request c;
    c.messages_json       = r.string(o, "messagesJson", "");
    c.tools_json          = r.string(o, "toolsJson", "");
    c.tool_choice         = r.string(o, "toolChoice", "auto");
    c.parallel_tool_calls = r.boolean(o, "parallelToolCalls", false);
    c.json_schema         = r.string(o, "jsonSchema", "");
    c.grammar             = r.string(o, "grammar", "");
    c.chatml              = r.boolean(o, "chatml", false);
    c.think               = r.boolean(o, "think", true);
    if (c.messages_json.empty()) r.fail("messagesJson must be a JSON array of messages");
    if (c.tool_choice != "auto" && c.tool_choice != "none" && c.tool_choice != "required") {
        r.fail("toolChoice must be auto, none or required, got " + c.tool_choice);
    }
    return c;
}

Napi::Object plan_to_js(Napi::Env env, const chat_plan & plan) {
    Napi::Object o = Napi::Object::New(env);
    Napi::Int32Array toks = Napi::Int32Array::New(env, plan.tokens.size());
    std::copy(plan.tokens.begin(), plan.tokens.end(), toks.Data());
    o.Set("tokens", toks);
    o.Set("grammar", grammar_to_js(env, plan.grammar));
    o.Set("additionalStops", strings_to_js(env, plan.additional_stops));
    o.Set("syntax", syntax_to_js(env, plan.syntax));
    if (plan.media) {
        o.Set("media", media_to_js(env, plan.media));
        o.Set("images", media_spans_to_js(env, *plan.media));
    }
    return o;
}

}  // namespace

void model_wrap::add_methods(std::vector<Napi::ClassPropertyDescriptor<model_wrap>> & methods) {
    methods.push_back(InstanceMethod("prepareChat", &model_wrap::prepare_chat));
    methods.push_back(InstanceMethod("parseChat", &model_wrap::parse_chat));
    methods.push_back(InstanceMethod("jsonSchemaToGrammar", &model_wrap::json_schema_to_grammar));
    methods.push_back(InstanceMethod("checkGrammar", &model_wrap::check_grammar));
    methods.push_back(InstanceMethod("checkJsonSchema", &model_wrap::check_json_schema));
    methods.push_back(InstanceMethod("checkTools", &model_wrap::check_tools));
    methods.push_back(InstanceMethod("loadProjector", &model_wrap::load_projector));
    methods.push_back(InstanceMethod("projectorInfo", &model_wrap::projector_info));
}

Napi::Value model_wrap::prepare_chat(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    live(env);
    js_reader r;
    const Napi::Object in = arg_object(info, 0, "prepareChat(request)");
    chat_request req = read_chat_request(r, in);
    read_chat_images(r, in, *state, req);
    throw_if_failed(env, r);
    // Formatting, grammar derivation and tokenizing run off the JS thread, as prepare() does.
    std::shared_ptr<model_state> st = state;
    return run_on_worker<chat_plan>(
        env,
        [st, req = std::move(req)]() {
            return chat_plan_make(*st, req);  // its errors name the template or the option
        },
        [](Napi::Env e, chat_plan & plan) -> Napi::Value { return plan_to_js(e, plan); });
}

Napi::Value model_wrap::parse_chat(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsString() || !info[2].IsObject()) {
        throw Napi::TypeError::New(env, "parseChat(text, partial, syntax): text must be a string and syntax an object");
    }
    js_reader r;
    const chat_syntax s = read_syntax(r, info[2].As<Napi::Object>());
    throw_if_failed(env, r);
    parsed_message m;
    try {
        m = chat_parse(info[0].As<Napi::String>().Utf8Value(), info[1].ToBoolean().Value(), s);
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("content", m.content);
    o.Set("reasoningContent", m.reasoning_content);
    Napi::Array calls = Napi::Array::New(env, m.tool_calls.size());
    for (size_t i = 0; i < m.tool_calls.size(); i++) {
        Napi::Object c = Napi::Object::New(env);
        c.Set("name", m.tool_calls[i].name);
        c.Set("arguments", m.tool_calls[i].arguments);
        c.Set("id", m.tool_calls[i].id);
        calls.Set((uint32_t) i, c);
    }
    o.Set("toolCalls", calls);
    return o;
}

Napi::Value model_wrap::json_schema_to_grammar(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) {
        throw Napi::TypeError::New(env, "jsonSchemaToGrammar(schemaJson): schemaJson must be a string");
    }
    // Converting a large schema takes long: off the JS thread, like prepareChat.
    return run_on_worker<std::string>(
        env, [schema = info[0].As<Napi::String>().Utf8Value()]() { return json_schema_grammar(schema); },
        [](Napi::Env e, std::string & gbnf) -> Napi::Value { return Napi::String::New(e, gbnf); });
}

namespace {
std::string string_arg(const Napi::CallbackInfo & info, const char * call) {
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), std::string(call) + ": the argument must be a string");
    return info[0].As<Napi::String>().Utf8Value();
}
}  // namespace

Napi::Value model_wrap::check_json_schema(const Napi::CallbackInfo & info) {
    return Napi::String::New(info.Env(), request_schema_check(string_arg(info, "checkJsonSchema(schemaJson)"), "jsonSchema"));
}

Napi::Value model_wrap::check_tools(const Napi::CallbackInfo & info) {
    return Napi::String::New(info.Env(), request_schema_check(string_arg(info, "checkTools(toolsJson)"), "tools"));
}

Napi::Value model_wrap::check_grammar(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) {
        throw Napi::TypeError::New(env, "checkGrammar(gbnf): gbnf must be a string");
    }
    return Napi::String::New(env, grammar_check(info[0].As<Napi::String>().Utf8Value()));
}

}  // namespace bmoe
