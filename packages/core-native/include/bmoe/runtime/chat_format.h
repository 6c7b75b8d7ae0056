#pragma once
// Chat formatting through llama.cpp's common chat templates (the GGUF's own Jinja template).
#include "bmoe/contract/params.h"

#include <string>
#include <vector>

namespace bmoe {

struct model_state;

struct chat_message {
    std::string role;
    std::string content;
};

struct chat_format_options {
    bool chatml        = contract::chat_format::chatml.def;         // ChatML instead of the GGUF's template
    bool think         = contract::chat_format::think.def;          // false: Qwen3 enable_thinking=false; gpt-oss answers on its final channel
    bool add_assistant = contract::chat_format::add_assistant.def;  // end with the assistant's generation prompt
};

// What to append to a formatted prompt when thinking is off and the template is Harmony (gpt-oss),
// whose real templates ignore enable_thinking: the final channel's opening, so the model answers
// directly. "" otherwise.
// Harmony's (gpt-oss) opening of the final channel, which harmony_final_suffix primes.
inline constexpr const char * harmony_final_open = "<|channel|>final<|message|>";

std::string harmony_final_suffix(const std::string & prompt, bool think);

// Throws std::runtime_error on template errors.
std::string chat_format(const model_state & m, const std::vector<chat_message> & msgs, const chat_format_options & o);

}  // namespace bmoe
