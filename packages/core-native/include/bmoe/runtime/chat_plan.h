#pragma once
// OpenAI-shaped chat requests through llama.cpp's common chat layer, as llama-server does it:
// messages and tools are read by its oaicompat parsers, formatted by common_chat_templates_apply
// (which also derives the grammar for tool calls and JSON schemas), and answers are read back by
// common_chat_parse (reasoning, content, tool calls). Native addon only: the wasm32-wasi build
// has no common library.
#include "bmoe/runtime/media.h"
#include "bmoe/runtime/sampler.h"

#include "llama.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct model_state;

struct chat_request {
    std::string messages_json;              // OpenAI messages (JSON array)
    std::string tools_json;                 // OpenAI tools (JSON array); "" = none
    std::string tool_choice = "auto";       // auto | none | required
    bool        parallel_tool_calls = false;
    std::string json_schema;                // the answer's JSON schema; "" = none
    std::string grammar;                    // the answer's GBNF; "" = none
    bool        chatml = false;             // ChatML instead of the GGUF's template
    bool        think  = true;              // false: the template's no-reasoning variant
    // Encoded images, one per media marker in the messages' text (in order), read through `proj`.
    std::vector<std::string>   images;
    image_limits               limits;
    std::shared_ptr<projector> proj;
};

// How an answer is read back (opaque to JavaScript; handed back to chat_parse).
struct chat_syntax {
    int32_t     format = 0;                 // common_chat_format
    std::string format_name;
    std::string generation_prompt;          // what the template wrote for the assistant
    std::string parser;                     // serialized PEG parser; "" = plain content
    bool        parse_tool_calls = false;
};

struct chat_plan {
    std::vector<llama_token> tokens;        // the prompt (special tokens parsed, one BOS)
    std::shared_ptr<media_prompt> media;    // its images (their cells in tokens); null = none
    grammar_spec             grammar;       // gbnf "" = free text
    std::vector<std::string> additional_stops;
    chat_syntax              syntax;
};

struct parsed_tool_call {
    std::string name;
    std::string arguments;                  // JSON text
    std::string id;                         // "" when the format carries none
};

struct parsed_message {
    std::string                   content;
    std::string                   reasoning_content;
    std::vector<parsed_tool_call> tool_calls;
};

// Throws std::runtime_error with a one-line message (bad JSON, a field llama.cpp refuses, a
// template error).
chat_plan chat_plan_make(const model_state & m, const chat_request & r);

// `partial`: the text may end mid-way (streaming). Throws std::runtime_error when a final text
// does not match the format.
parsed_message chat_parse(const std::string & text, bool partial, const chat_syntax & s);

// llama.cpp's json_schema_to_grammar. Throws std::runtime_error naming what it cannot convert.
std::string json_schema_grammar(const std::string & schema_json);

// The bounds a request's JSON schema (option "jsonSchema") or tools array (option "tools") is
// checked against before anything converts it: "" when within them, else one line starting with
// the option. Linear, no llama.cpp: callable on the JS thread before a request queues.
std::string request_schema_check(const std::string & json_text, const char * option);

}  // namespace bmoe
