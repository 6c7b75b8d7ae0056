#include "bmoe/runtime/chat_plan.h"

#include "bmoe/runtime/chat_format.h"
#include "bmoe/runtime/model_state.h"
#include "bmoe/runtime/prompt.h"
#include "bmoe/runtime/sampler.h"
#include "bmoe/runtime/template_bounds.h"
#include "bmoe/limits/grammar_limits.h"
#include "bmoe/limits/one_line.h"
#include "bmoe/limits/json_limits.h"
#include "bmoe/limits/schema_limits.h"

#include "chat.h"
#include "json-schema-to-grammar.h"

#include <stdexcept>

namespace bmoe {

namespace {

// Request JSON nests at most this deep: llama.cpp's chat layer and schema converter recurse.
constexpr size_t max_json_depth = 64;

// `option`: the request option the text comes from, which starts every error about it (the
// engine and the server name the field by it).
common_json parse_json(const std::string & text, const char * what, const char * option) {
    const std::string deep = json_check_depth(text, max_json_depth, what);
    if (!deep.empty()) throw std::runtime_error(std::string(option) + ": " + deep);
    try {
        return common_json::parse(text);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string(option) + ": " + what + " is not valid JSON: " + one_line_clip(e.what(), 200));
    }
}

void check_schema_text(const std::string & text, const char * option) {
    const std::string e = request_schema_check(text, option);
    if (!e.empty()) throw std::runtime_error(e);
}

// A schema llama.cpp's converter refuses, told as the option it is (inside the template's
// apply the same refusal reads "Automatic parser generation failed").
void check_convertible(const common_json & schema, const std::string & what) {
    try {
        (void) json_schema_to_grammar(schema);
    } catch (const std::exception & e) {
        throw std::runtime_error(what + " cannot be turned into a grammar: " + one_line_clip(e.what(), 200));
    }
}

void check_tools_convertible(const common_json & tools) {
    if (!tools.is_array()) return;
    for (const auto & t : tools) {
        if (!t.is_object() || !t.contains("function") || !t.at("function").is_object()) continue;
        const auto & f = t.at("function");
        if (!f.contains("parameters")) continue;
        const std::string name = f.contains("name") && f.at("name").is_string() ? f.at("name").get<std::string>() : "?";
        check_convertible(f.at("parameters"), "tools: function '" + one_line_clip(name, 64) + "' parameters");
    }
}

// The grammar a request ends up with, within the bounds llama.cpp's sampler can run.
void check_grammar(const std::string & gbnf, const char * option) {
    const std::string e = grammar_check(gbnf);
    if (e.empty()) return;
    // A grammar made from a schema or tools: the option is what the user wrote.
    const std::string derived = std::string(option) == "grammar" ? e : "its grammar" + e.substr(e.find(':'));
    throw std::runtime_error(std::string(option) + ": " + derived);
}

grammar_trigger from_common(const common_grammar_trigger & c) {
    grammar_trigger t;
    t.value = c.value;
    t.id    = c.token;
    switch (c.type) {
        case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN:        t.kind = grammar_trigger::token; break;
        case COMMON_GRAMMAR_TRIGGER_TYPE_WORD:         t.kind = grammar_trigger::word; break;
        case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN:      t.kind = grammar_trigger::pattern; break;
        case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: t.kind = grammar_trigger::pattern_full; break;
    }
    return t;
}

common_chat_templates_inputs make_inputs(const chat_request & r) {
    common_chat_templates_inputs in;
    in.messages = common_chat_msgs_parse_oaicompat(parse_json(r.messages_json, "the conversation", "messages"));
    if (!r.tools_json.empty()) {
        const common_json tools = parse_json(r.tools_json, "tools", "tools");
        check_schema_text(r.tools_json, "tools");
        check_tools_convertible(tools);
        in.tools = common_chat_tools_parse_oaicompat(tools);
    }
    in.tool_choice         = common_chat_tool_choice_parse_oaicompat(r.tool_choice);
    in.parallel_tool_calls = r.parallel_tool_calls;
    if (!r.json_schema.empty()) {
        const common_json schema = parse_json(r.json_schema, "the JSON schema", "jsonSchema");
        check_schema_text(r.json_schema, "jsonSchema");
        check_convertible(schema, "jsonSchema: the JSON schema");
        in.json_schema = schema.dump();
    }
    if (!r.grammar.empty()) check_grammar(r.grammar, "grammar");
    in.grammar               = r.grammar;
    in.use_jinja             = true;
    in.add_generation_prompt = true;
    in.enable_thinking       = r.think;
    // llama-server's default: reasoning goes to reasoning_content, in streamed deltas too.
    in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
    // A conversation that ends with an assistant message is continued from it (llama-server's
    // assistant prefill): the answer starts where that message stops.
    const auto & msgs = in.messages;
    if (!msgs.empty() && msgs.back().role == "assistant") {
        if (msgs.size() >= 2 && msgs[msgs.size() - 2].role == "assistant") {
            throw std::runtime_error("cannot have 2 or more assistant messages at the end of the list");
        }
        if (!msgs.back().tool_calls.empty()) {
            throw std::runtime_error("cannot continue an assistant message that contains tool calls");
        }
        in.continue_final_message = COMMON_CHAT_CONTINUATION_AUTO;
        in.add_generation_prompt  = false;
    }
    if (!in.tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE && !r.grammar.empty()) {
        throw std::runtime_error("a grammar cannot be combined with tools");
    }
    if (!r.json_schema.empty() && !r.grammar.empty()) {
        throw std::runtime_error("a grammar cannot be combined with a JSON schema");
    }
    return in;
}

// Harmony (gpt-oss) with thinking off primes the final channel, where no tool call can come: with
// callable tools the answer starts after "<|start|>assistant" instead (the empty analysis stays, so
// thinking is still off), and a call the request forces (tool_choice required) can come.
void unprime_final_channel(common_chat_params & p) {
    static const std::string final_open = harmony_final_open;
    const auto ends_with = [](const std::string & s, const std::string & tail) {
        return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (!ends_with(p.prompt, final_open) || !ends_with(p.generation_prompt, final_open)) return;
    p.prompt.resize(p.prompt.size() - final_open.size());
    p.generation_prompt.resize(p.generation_prompt.size() - final_open.size());
}

// The sampler feeds a derived grammar the template's generation prompt before the first token. A
// grammar that rejects it (a template priming what the grammar has no place for) is this request's
// combination: refused here, naming the option, instead of failing the generation later.
void check_prefill(const model_state & m, const grammar_spec & g, const char * option) {
    if (g.kind == grammar_spec::user || g.gbnf.empty() || g.generation_prompt.empty()) return;
    sampling_params sp;
    sp.grammar = g;
    try {
        sampler_init(m.model, 0, sp);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string(option) + ": the chat template's start of the answer does not fit the grammar of this request (" +
                                 one_line_clip(e.what()) + ")");
    }
}

}  // namespace

chat_plan chat_plan_make(const model_state & m, const chat_request & r) {
    common_chat_params p;
    common_chat_templates_inputs in;
    try {
        in = make_inputs(r);
    } catch (const std::exception & e) {
        throw std::runtime_error(one_line_clip(e.what()));  // llama.cpp's readers may quote the whole input
    }
    template_bounds bounds(template_bounds::render_ms);
    try {
        p = common_chat_templates_apply(r.chatml ? m.chatml : m.chat_templates, in);
        if (!in.tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE) unprime_final_channel(p);
        // Only a request without tools or schema: the answer is then plain content.
        if (in.tools.empty() && r.json_schema.empty() && r.grammar.empty()) {
            const std::string suffix = harmony_final_suffix(p.prompt, r.think);
            if (!suffix.empty()) {
                p.prompt += suffix;
                p.generation_prompt += suffix;
            }
        }
    } catch (const std::exception & e) {
        throw bounds.error(e, "chat template");  // json and invalid_argument errors become one kind
    }
    chat_plan plan;
    plan.tokens = chat_text_tokens(llama_model_get_vocab(m.model), p.prompt);
    plan.additional_stops = p.additional_stops;
    plan.syntax.format            = (int32_t) p.format;
    plan.syntax.format_name       = common_chat_format_name(p.format);
    plan.syntax.generation_prompt = p.generation_prompt;
    plan.syntax.parser            = p.parser;
    plan.syntax.parse_tool_calls  = !r.tools_json.empty() && r.tool_choice != "none";
    // Formats that derive no grammar of their own leave a request's grammar (or schema) out of
    // their parameters: it then constrains the answer from its first token, as a user grammar.
    if (p.grammar.empty() && !r.grammar.empty()) {
        plan.grammar.gbnf = r.grammar;
    } else if (p.grammar.empty() && !r.json_schema.empty()) {
        plan.grammar.gbnf = json_schema_grammar(r.json_schema);
    } else if (!p.grammar.empty()) {
        // A derived grammar is bounded like a request's own: it comes from the request's schemas.
        check_grammar(p.grammar, !r.grammar.empty() ? "grammar" : !r.tools_json.empty() && r.tool_choice != "none" ? "tools" : "jsonSchema");
        plan.grammar.gbnf = p.grammar;
        // A request's own grammar stays a user grammar; a derived one starts at the generation prompt.
        plan.grammar.kind = !r.grammar.empty() ? grammar_spec::user : !r.json_schema.empty() && !plan.syntax.parse_tool_calls ? grammar_spec::output : grammar_spec::tools;
        plan.grammar.lazy = p.grammar_lazy;
        plan.grammar.generation_prompt = p.generation_prompt;
        for (const auto & t : p.grammar_triggers) plan.grammar.triggers.push_back(from_common(t));
        check_prefill(m, plan.grammar, !r.grammar.empty() ? "grammar" : plan.syntax.parse_tool_calls ? "tools" : "jsonSchema");
    }
    return plan;
}

parsed_message chat_parse(const std::string & text, bool partial, const chat_syntax & s) {
    // Loading a serialized parser costs more than a short parse: streaming parses once per token
    // with the same syntax, so the last one is kept (per thread: workers may parse too).
    thread_local std::string      cached_src;
    thread_local common_peg_arena cached_parser;
    common_chat_parser_params pp;
    pp.format            = (common_chat_format) s.format;
    pp.reasoning_format  = COMMON_REASONING_FORMAT_DEEPSEEK;
    pp.generation_prompt = s.generation_prompt;
    pp.parse_tool_calls  = s.parse_tool_calls;
    common_chat_msg msg;
    try {
        if (!s.parser.empty() && s.parser != cached_src) {
            cached_parser = common_peg_arena();
            cached_parser.load(s.parser);
            cached_src = s.parser;
        }
        static const common_peg_arena plain;  // common_chat_peg_parse's "content only"
        msg = common_chat_peg_parse(s.parser.empty() ? plain : cached_parser, text, partial, pp);
    } catch (const std::exception & e) {
        throw std::runtime_error(e.what());
    }
    parsed_message out;
    out.content           = msg.content;
    out.reasoning_content = msg.reasoning_content;
    for (const auto & c : msg.tool_calls) out.tool_calls.push_back({ c.name, c.arguments, c.id });
    return out;
}

std::string request_schema_check(const std::string & json_text, const char * option) {
    const bool tools = std::string(option) == "tools";
    std::string e = json_check_depth(json_text, max_json_depth, tools ? "tools" : "the JSON schema");
    if (e.empty()) e = tools ? tools_check_text(json_text) : schema_check_text(json_text);
    return e.empty() ? e : std::string(option) + ": " + e;
}

std::string json_schema_grammar(const std::string & schema_json) {
    const common_json schema = parse_json(schema_json, "the JSON schema", "jsonSchema");
    check_schema_text(schema_json, "jsonSchema");
    std::string gbnf;
    try {
        gbnf = json_schema_to_grammar(schema);
    } catch (const std::exception & e) {
        throw std::runtime_error("jsonSchema: the JSON schema cannot be turned into a grammar: " + one_line_clip(e.what(), 200));
    }
    check_grammar(gbnf, "jsonSchema");
    return gbnf;
}

}  // namespace bmoe
