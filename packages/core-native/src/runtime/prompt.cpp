#include "bmoe/runtime/prompt.h"

#include "bmoe/runtime/model_state.h"

#include <stdexcept>

namespace bmoe {

std::vector<llama_token> tokenize_text(const llama_vocab * vocab, const std::string & text, bool add_special, bool parse_special) {
    if (text.size() > (size_t) INT32_MAX / 2) throw std::runtime_error("the text is too long to tokenize");
    std::vector<llama_token> toks(text.size() + 8);
    int32_t n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), toks.data(), (int32_t) toks.size(), add_special, parse_special);
    if (n < 0) {
        toks.resize((size_t) -n);
        n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), toks.data(), (int32_t) toks.size(), add_special, parse_special);
    }
    if (n < 0) throw std::runtime_error("tokenize failed");
    toks.resize((size_t) n);
    return toks;
}

std::vector<llama_token> prompt_tokens(const model_state & m, const prompt_input & in) {
    const llama_vocab * vocab = llama_model_get_vocab(m.model);
    if (!in.is_chat) return tokenize_text(vocab, in.text, true, true);
    std::string text;
    try {
        text = chat_format(m, in.messages, in.format);
    } catch (const std::exception & e) {
        throw std::runtime_error(std::string("chat template: ") + e.what());
    }
    std::vector<llama_token> toks = tokenize_text(vocab, text, true, true);
    const llama_token bos = llama_vocab_bos(vocab);
    if (bos != LLAMA_TOKEN_NULL && toks.size() >= 2 && toks[0] == bos && toks[1] == bos) toks.erase(toks.begin());
    return toks;
}

}  // namespace bmoe
