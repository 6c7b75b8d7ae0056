#pragma once
// Log-probabilities of tokens under the model's distribution at one position (the softmax of its
// raw logits, before any sampler: what llama-server reports for n_probs and OpenAI's logprobs).
#include "llama.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct token_prob {
    llama_token token   = 0;
    float       logprob = 0;
    std::string piece;  // its bytes (special tokens rendered), filled by the caller that has the vocab
};

struct token_probs {
    llama_token             token   = 0;  // the token taken at this position
    std::string             piece;        // its bytes, where the caller has no other record of them
    float                   logprob = 0;  // of the token taken at this position
    std::vector<token_prob> top;          // the most likely tokens, most likely first
};

// `token`'s log-probability among `n_vocab` logits, and the `n_top` most likely tokens' (ties:
// the lower id first), their pieces filled from `vocab`.
token_probs token_probs_at(const llama_vocab * vocab, const float * logits, int32_t n_vocab, llama_token token, int32_t n_top);

}  // namespace bmoe
