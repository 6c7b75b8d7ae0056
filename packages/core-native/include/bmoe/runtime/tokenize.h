#pragma once
// Text <-> tokens with llama.cpp's vocabulary, buffers grown as needed. Shared by both addons
// (the wasm build has no common library, so this stays apart from chat formatting).
#include "llama.h"

#include <string>
#include <vector>

namespace bmoe {

// Throws std::runtime_error on failure (never seen with a valid vocabulary).
std::vector<llama_token> tokenize_text(const llama_vocab * vocab, const std::string & text, bool add_special, bool parse_special);

// One token's bytes, special tokens rendered (may be a partial UTF-8 sequence).
std::string token_piece(const llama_vocab * vocab, llama_token t);

// The tokens' text, special tokens rendered as text.
std::string detokenize_text(const llama_vocab * vocab, const llama_token * tokens, size_t n);

}  // namespace bmoe
