#pragma once
// Turning a prompt into tokens: raw text (llama-completion -p) or chat messages through the
// template. No Node-API: the addon runs it on a worker thread so a huge prompt never blocks
// JavaScript's event loop.
#include "bmoe/runtime/chat_format.h"

#include "llama.h"

#include <string>
#include <vector>

namespace bmoe {


struct prompt_input {
    bool                      is_chat = false;
    std::string               text;      // !is_chat
    std::vector<chat_message> messages;  // is_chat
    chat_format_options       format;
};

// The prompt's tokens, with special-token parsing and the model's BOS (one BOS even when the
// template writes its own, as llama.cpp keeps). Throws std::runtime_error.
std::vector<llama_token> prompt_tokens(const model_state & m, const prompt_input & in);

// A formatted chat prompt's tokens: special tokens parsed, the model's BOS once even when the
// template writes its own.
std::vector<llama_token> chat_text_tokens(const llama_vocab * vocab, const std::string & text);

}  // namespace bmoe
