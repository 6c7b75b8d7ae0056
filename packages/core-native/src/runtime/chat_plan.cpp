#include "bmoe/runtime/chat_plan.h"

#include "bmoe/runtime/chat_format.h"
#include "bmoe/runtime/model_state.h"
#include "bmoe/runtime/prompt.h"

#include "chat.h"
#include "json-schema-to-grammar.h"

#include <stdexcept>

namespace bmoe {

namespace {

common_json parse_json(const std::string & text, const char * what) {
    try {
        return common_json::parse(text);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string(what) + " is not valid JSON: " + e.what());
    }
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
    in.messages = common_chat_msgs_parse_oaicompat(parse_json(r.messages_json, "messages"));
    if (!r.tools_json.empty()) in.tools = common_chat_tools_parse_oaicompat(parse_json(r.tools_json, "tools"));
    in.tool_choice         = common_chat_tool_choice_parse_oaicompat(r.tool_choice);
    in.parallel_tool_calls = r.parallel_tool_calls;
    if (!r.json_schema.empty()) in.json_schema = parse_json(r.json_schema, "json_schema").dump();
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

}  // namespace

chat_plan chat_plan_make(const model_state & m, const chat_request & r) {
    common_chat_params p;
    try {
        const common_chat_templates_inputs in = make_inputs(r);
        p = common_chat_templates_apply(r.chatml ? m.chatml : m.chat_templates, in);
        // Only a request without tools or schema: the answer is then plain content.
        if (in.tools.empty() && r.json_schema.empty() && r.grammar.empty()) {
            const std::string suffix = harmony_final_suffix(p.prompt, r.think);
            if (!suffix.empty()) {
                p.prompt += suffix;
                p.generation_prompt += suffix;
            }
        }
    } catch (const std::exception & e) {
        throw std::runtime_error(e.what());  // json and invalid_argument errors become one kind
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
        plan.grammar.gbnf = p.grammar;
        // A request's own grammar stays a user grammar; a derived one starts at the generation prompt.
        plan.grammar.kind = !r.grammar.empty() ? grammar_spec::user : !r.json_schema.empty() && !plan.syntax.parse_tool_calls ? grammar_spec::output : grammar_spec::tools;
        plan.grammar.lazy = p.grammar_lazy;
        plan.grammar.generation_prompt = p.generation_prompt;
        for (const auto & t : p.grammar_triggers) plan.grammar.triggers.push_back(from_common(t));
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

std::string json_schema_grammar(const std::string & schema_json) {
    const common_json schema = parse_json(schema_json, "the JSON schema");
    try {
        return json_schema_to_grammar(schema);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string("the JSON schema cannot be turned into a grammar: ") + e.what());
    }
}

}  // namespace bmoe
