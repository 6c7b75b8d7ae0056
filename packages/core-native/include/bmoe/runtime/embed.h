#pragma once
// Embeddings: one input's tokens decoded in an embedding context (llama_context_params.embeddings,
// a pooling type), pooled into one vector and normalized (L2), as llama-server's /v1/embeddings
// gives them (embd_normalize 2).
#include "llama.h"

#include <vector>

namespace bmoe {

// Throws std::runtime_error naming the problem: an input longer than one batch (pooling needs all
// of an input's tokens in one micro-batch), a failed decode.
std::vector<float> embed_tokens(llama_context * ctx, const std::vector<llama_token> & tokens);

}  // namespace bmoe
