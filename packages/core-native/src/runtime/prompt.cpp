#include "bmoe/runtime/prompt.h"

#include "bmoe/runtime/model_state.h"
#include "bmoe/runtime/tokenize.h"

#include <stdexcept>

namespace bmoe {


std::vector<llama_token> prompt_tokens(const model_state & m, const prompt_input & in) {
    const llama_vocab * vocab = llama_model_get_vocab(m.model);
    if (!in.is_chat) return tokenize_text(vocab, in.text, true, true);
    std::string text;
    try {
        text = chat_format(m, in.messages, in.format);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string("chat template: ") + e.what());
    }
    return chat_text_tokens(vocab, text);
}

std::vector<llama_token> chat_text_tokens(const llama_vocab * vocab, const std::string & text) {
    std::vector<llama_token> toks = tokenize_text(vocab, text, true, true);
    const llama_token bos = llama_vocab_bos(vocab);
    if (bos != LLAMA_TOKEN_NULL && toks.size() >= 2 && toks[0] == bos && toks[1] == bos) toks.erase(toks.begin());
    return toks;
}

}  // namespace bmoe
