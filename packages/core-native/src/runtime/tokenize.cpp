#include "bmoe/runtime/tokenize.h"

#include <climits>
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

std::string detokenize_text(const llama_vocab * vocab, const llama_token * tokens, size_t n) {
    std::string out(n * 8 + 16, '\0');
    int32_t m = llama_detokenize(vocab, tokens, (int32_t) n, out.data(), (int32_t) out.size(), false, false);
    if (m < 0) {
        out.resize((size_t) -m);
        m = llama_detokenize(vocab, tokens, (int32_t) n, out.data(), (int32_t) out.size(), false, false);
    }
    out.resize(m > 0 ? (size_t) m : 0);
    return out;
}

std::string token_piece(const llama_vocab * vocab, llama_token t) {
    std::string out(32, '\0');
    int n = llama_token_to_piece(vocab, t, out.data(), (int32_t) out.size(), 0, true);
    if (n < 0) {
        out.resize((size_t) -n);
        n = llama_token_to_piece(vocab, t, out.data(), (int32_t) out.size(), 0, true);
    }
    out.resize(n > 0 ? (size_t) n : 0);
    return out;
}

}  // namespace bmoe
