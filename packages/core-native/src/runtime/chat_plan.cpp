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
#include "chat-peg-parser.h"
#include "json-schema-to-grammar.h"
#include "peg-parser.h"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <variant>

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

// A forced answer (tool_choice required or a named function; a JSON schema) leaves nothing to the
// model but its reasoning and the answer itself. llama.cpp's eager grammars for these come from
// the same PEG parser that reads the answer back, and it admits what a model may write around
// the answer: text before the call (an `until` the call's opening: autoparser
// chat-auto-parser-generator.cpp build_tool_parser_*, qwen3-coder, deepseek, gemma4), any number
// of analysis / preamble messages (gpt-oss `(start any)*`, gemma4 `message*`). With random or
// weak weights that text runs to max_tokens before the call opens. The grammar is rebuilt here
// from that parser with what only the grammar needs changed (the parser reading the answer back
// is not changed):
//  - tools: a content-tagged node, or an untagged `until`, outside the reasoning and the calls
//    matches nothing (the text before the call, gemma4's scan to the call);
//  - tools and schema: a repetition outside the reasoning and the answer runs at most once (one
//    reasoning block, one harmony analysis or preamble message before the call).
// Reasoning (a reasoning-tagged node) stays as it is: the reasoning budget bounds it (sampler).
class answer_forcing {
  public:
    answer_forcing(common_peg_arena & a, bool drop_text) : a_(a), drop_text_(drop_text) {}

    void run() { walk(a_.root()); }

  private:
    common_peg_arena &             a_;
    bool                           drop_text_;
    std::set<common_peg_parser_id> seen_;

    static bool is_tool_tag(const std::string & tag) { return tag.rfind("tool", 0) == 0; }

    static bool is_reasoning_tag(const std::string & tag) {
        return tag == common_chat_peg_builder::REASONING || tag == common_chat_peg_builder::REASONING_BLOCK;
    }

    // The answer itself: a trigger rule (the calls), a tool-tagged node, a JSON schema.
    bool holds_answer(common_peg_parser_id id, std::set<common_peg_parser_id> & seen) const {
        if (id == COMMON_PEG_INVALID_PARSER_ID || !seen.insert(id).second) return false;
        return std::visit([&](const auto & p) -> bool {
            using T = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<T, common_peg_rule_parser>) {
                return p.trigger || holds_answer(p.child, seen);
            } else if constexpr (std::is_same_v<T, common_peg_tag_parser>) {
                return is_tool_tag(p.tag) || holds_answer(p.child, seen);
            } else if constexpr (std::is_same_v<T, common_peg_schema_parser>) {
                return true;
            } else if constexpr (std::is_same_v<T, common_peg_sequence_parser> || std::is_same_v<T, common_peg_choice_parser>) {
                for (auto c : p.children) if (holds_answer(c, seen)) return true;
                return false;
            } else if constexpr (std::is_same_v<T, common_peg_repetition_parser> || std::is_same_v<T, common_peg_atomic_parser>) {
                return holds_answer(p.child, seen);
            } else {
                return false;
            }
        }, a_.get(id));
    }

    // Writes no GBNF: a repetition of it would be a bare "?" or "*" (invalid), so it goes too.
    bool writes_nothing(common_peg_parser_id id) const {
        return std::visit([&](const auto & p) -> bool {
            using T = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<T, common_peg_epsilon_parser> || std::is_same_v<T, common_peg_and_parser> ||
                          std::is_same_v<T, common_peg_not_parser>) {
                return true;
            } else if constexpr (std::is_same_v<T, common_peg_literal_parser>) {
                return p.literal.empty();
            } else if constexpr (std::is_same_v<T, common_peg_tag_parser> || std::is_same_v<T, common_peg_atomic_parser>) {
                return writes_nothing(p.child);
            } else if constexpr (std::is_same_v<T, common_peg_sequence_parser>) {
                for (auto c : p.children) if (!writes_nothing(c)) return false;
                return true;
            } else {
                return false;
            }
        }, a_.get(id));
    }

    void walk(common_peg_parser_id id) {
        if (id == COMMON_PEG_INVALID_PARSER_ID || !seen_.insert(id).second) return;
        auto & node = a_.get(id);
        bool   drop = false;
        common_peg_parser_id repeated = COMMON_PEG_INVALID_PARSER_ID;
        std::vector<common_peg_parser_id> next;
        std::visit([&](auto & p) {
            using T = std::decay_t<decltype(p)>;
            if constexpr (std::is_same_v<T, common_peg_rule_parser>) {
                if (!p.trigger) next.push_back(p.child);  // a trigger rule is the calls
            } else if constexpr (std::is_same_v<T, common_peg_tag_parser>) {
                if (is_reasoning_tag(p.tag) || is_tool_tag(p.tag)) return;
                if (p.tag == common_chat_peg_builder::CONTENT && drop_text_) { drop = true; return; }
                next.push_back(p.child);
            } else if constexpr (std::is_same_v<T, common_peg_until_parser>) {
                drop = drop_text_;
            } else if constexpr (std::is_same_v<T, common_peg_repetition_parser>) {
                std::set<common_peg_parser_id> s;
                if (p.max_count < 0 && !holds_answer(p.child, s)) p.max_count = std::max(p.min_count, 1);
                repeated = p.child;
                next.push_back(p.child);
            } else if constexpr (std::is_same_v<T, common_peg_sequence_parser> || std::is_same_v<T, common_peg_choice_parser>) {
                next = p.children;
            } else if constexpr (std::is_same_v<T, common_peg_atomic_parser>) {
                next.push_back(p.child);
            }
            // schema (the JSON answer), gbnf (its own text), lookaheads (no grammar): as they are
        }, node);
        if (drop) {
            // An empty literal, not epsilon: a rule whose body is epsilon would be written as an
            // empty GBNF rule ("content ::= "), which llama.cpp's grammar parser refuses.
            node = common_peg_literal_parser{""};
            return;
        }
        for (auto c : next) walk(c);
        if (repeated != COMMON_PEG_INVALID_PARSER_ID && writes_nothing(repeated)) a_.get(id) = common_peg_literal_parser{""};
    }
};

// The eager grammar of a forced answer, rebuilt from the chat parameters' parser (see
// answer_forcing). "" when the format has no serialized parser (the grammar stays llama.cpp's).
std::string forced_answer_grammar(const common_chat_params & p, const chat_request & r, bool tools) {
    if (p.parser.empty()) return "";
    common_peg_arena arena;
    arena.load(p.parser);
    answer_forcing(arena, tools).run();
    common_json tool_list = tools ? common_json::parse(r.tools_json) : common_json();
    common_json schema    = !r.json_schema.empty() ? common_json::parse(r.json_schema) : common_json();
    // As llama.cpp builds it (chat.cpp, chat-auto-parser-generator.cpp): the schemas' $refs resolved.
    return build_grammar([&](const common_grammar_builder & b) {
        if (tool_list.is_array()) {
            for (auto & t : tool_list) {
                if (!t.is_object() || !t.contains("function") || !t.at("function").is_object()) continue;
                auto & f = t.at("function");
                if (f.contains("parameters")) b.resolve_refs(f.at("parameters"));
            }
        }
        if (schema.is_object()) b.resolve_refs(schema);
        arena.build_grammar(b, /* lazy = */ false);
    });
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
    if (r.images.empty()) {
        plan.tokens = chat_text_tokens(llama_model_get_vocab(m.model), p.prompt);
    } else {
        if (!r.proj) throw std::runtime_error("the messages hold images but the model has no projector (mmproj) loaded");
        plan.media  = std::make_shared<media_prompt>();
        plan.tokens = media_tokenize(r.proj, p.prompt, r.images, r.limits, true, *plan.media);
    }
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
        // A forced answer: nothing but reasoning before the call or the JSON (answer_forcing).
        const bool forced_tools  = plan.syntax.parse_tool_calls && r.tool_choice == "required" && !p.grammar_lazy;
        const bool forced_schema = !plan.syntax.parse_tool_calls && r.grammar.empty() && !r.json_schema.empty() && !p.grammar_lazy;
        if (forced_tools || forced_schema) {
            std::string forced;
            try {
                forced = forced_answer_grammar(p, r, forced_tools);
            } catch (const std::exception & e) {
                throw std::runtime_error(std::string(forced_tools ? "tools" : "jsonSchema") +
                                         ": its grammar cannot be built: " + one_line_clip(e.what(), 200));
            }
            if (!forced.empty()) p.grammar = forced;
            plan.grammar.forces_answer = true;
        }
        check_grammar(p.grammar, !r.grammar.empty() ? "grammar" : !r.tools_json.empty() && r.tool_choice != "none" ? "tools" : "jsonSchema");
        plan.grammar.gbnf = p.grammar;
        // A request's own grammar stays a user grammar; a derived one starts at the generation prompt.
        plan.grammar.kind = !r.grammar.empty() ? grammar_spec::user : !r.json_schema.empty() && !plan.syntax.parse_tool_calls ? grammar_spec::output : grammar_spec::tools;
        plan.grammar.lazy = p.grammar_lazy;
        plan.grammar.generation_prompt = p.generation_prompt;
        for (const auto & t : p.grammar_triggers) plan.grammar.triggers.push_back(from_common(t));
        check_prefill(m, plan.grammar, !r.grammar.empty() ? "grammar" : plan.syntax.parse_tool_calls ? "tools" : "jsonSchema");
    }
    // The reasoning block the budget counts in (llama-server passes the same tags,
    // server-common.cpp): with or without a grammar; a user grammar has no reasoning rule to end.
    if (p.supports_thinking && !p.thinking_start_tag.empty() && !p.thinking_end_tags.empty() &&
        (plan.grammar.gbnf.empty() || plan.grammar.kind != grammar_spec::user)) {
        plan.grammar.reasoning_start   = p.thinking_start_tag;
        plan.grammar.reasoning_ends    = p.thinking_end_tags;
        plan.grammar.generation_prompt = p.generation_prompt;
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
