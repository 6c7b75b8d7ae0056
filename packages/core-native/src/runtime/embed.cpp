#include "bmoe/runtime/embed.h"

#include "common.h"

#include <stdexcept>
#include <string>

namespace bmoe {

std::vector<float> embed_tokens(llama_context * ctx, const std::vector<llama_token> & tokens) {
    if (tokens.empty()) throw std::runtime_error("an input is empty (0 tokens)");
    // Pooled over one micro-batch (the context is made with n_ubatch = n_batch), as llama-server.
    const uint32_t n_ubatch = llama_n_ubatch(ctx);
    if (tokens.size() > n_ubatch) {
        throw std::runtime_error("an input has " + std::to_string(tokens.size()) + " tokens; an embedding takes at most " +
                                 std::to_string(n_ubatch) + " (the batch size, --ubatch-size)");
    }
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_batch batch = llama_batch_init((int32_t) tokens.size(), 0, 1);
    for (size_t i = 0; i < tokens.size(); i++) {
        batch.token[i]     = tokens[i];
        batch.pos[i]       = (llama_pos) i;
        batch.n_seq_id[i]  = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i]    = true;
    }
    batch.n_tokens = (int32_t) tokens.size();
    const int32_t rc = llama_decode(ctx, batch);
    llama_batch_free(batch);
    if (rc != 0) throw std::runtime_error("llama_decode failed with code " + std::to_string(rc));
    const float * e = llama_get_embeddings_seq(ctx, 0);
    if (!e) throw std::runtime_error("the context gave no pooled embedding");
    const int32_t n = llama_model_n_embd(llama_get_model(ctx));
    std::vector<float> out((size_t) n);
    common_embd_normalize(e, out.data(), n, 2);
    return out;
}

}  // namespace bmoe
