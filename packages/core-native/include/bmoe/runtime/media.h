#pragma once
// Images in a prompt, through llama.cpp's multimodal library (tools/mtmd): the model's projector
// (an mmproj GGUF, loaded resident beside the text model), images decoded and bounded, and a
// prompt with images tokenized into what the generator evaluates: text tokens, and for each image
// a run of cells whose token ids are the image's own negative id (media_token), so a cached
// prefix is compared image by image just as text is, and an image already in a sequence's KV is
// not encoded again. Native addon only (the wasm32-wasi build has no mtmd).
#include "llama.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct mtmd_context;
struct mtmd_input_chunk;

namespace bmoe {

// A loaded projector. Encoding is not thread-safe in libmtmd: `encode_mu` is held around it (two
// contexts of one model may encode at once).
struct projector {
    mtmd_context * ctx = nullptr;
    std::string    path;
    const llama_vocab * vocab = nullptr;  // the text model's
    bool           vision = false;
    bool           audio  = false;
    bool           mrope  = false;  // positions advance by an image's n_pos, not its token count
    std::string    marker;          // where an image goes in prompt text
    std::mutex     encode_mu;

    projector() = default;
    ~projector();
    projector(const projector &) = delete;
    projector & operator=(const projector &) = delete;
};

// Loads `path` for `model` (its n_embd must be the projector's output size). Throws
// std::runtime_error with one line naming the file and llama.cpp's reason.
std::shared_ptr<projector> projector_load(const llama_model * model, const std::string & path, int32_t threads);

// Loads the model's vocabulary and hyperparameters only, then the projector with its warm-up encode
// (an image's graph built and run once). Meant for a child process: llama.cpp's projector code
// checks tensors against the metadata only when it builds a graph, and aborts the process on a
// contradiction (GGML_ASSERT), so a damaged or hostile projector must kill a probe, not the
// caller. Throws std::runtime_error for what llama.cpp refuses and reports.
void projector_probe(const std::string & model_path, const std::string & mmproj_path, int32_t threads);

// The bounds an image is checked against before it is decoded.
struct image_limits {
    uint64_t max_pixels = 0;  // one image's, and the prompt's images' together; 0 = unbounded
};

// One image of a prompt: its cells in the prompt's tokens, and what evaluates it.
struct media_span {
    size_t                            start    = 0;   // index of its first cell in the tokens
    int32_t                           n_tokens = 0;   // cells (KV entries)
    llama_pos                         n_pos    = 0;   // positions it takes (== n_tokens unless M-RoPE)
    llama_token                       id       = 0;   // media_token of its content
    std::shared_ptr<mtmd_input_chunk> chunk;          // null in a sequence's record of its cache
};

// A prepared prompt's images. It keeps the projector alive, never the model: a handle JavaScript
// has not collected yet must not hold a closed model's weights (and its file mapping) in memory.
// It is evaluated only through a context, which holds the model.
struct media_prompt {
    std::shared_ptr<projector> proj;
    std::vector<media_span>    spans;  // in prompt order
};

// A prompt's token ids for an image's cells: <= -2 (LLAMA_TOKEN_NULL is -1), from its content hash.
llama_token media_token(uint64_t hash);
inline bool is_media_token(llama_token t) { return t <= -2; }

// `text` with the projector's marker where each image goes (in order) and the images' encoded
// bytes (PNG, JPEG, BMP, GIF, ... what stb_image reads) into tokens and spans. Special tokens are
// parsed; add_special adds the model's BOS. Throws std::runtime_error with one line: "image N: ..."
// for an image that cannot be read or exceeds the limits, or a marker count that differs from the
// image count.
std::vector<llama_token> media_tokenize(const std::shared_ptr<projector> & proj, const std::string & text,
                                        const std::vector<std::string> & images, const image_limits & limits,
                                        bool add_special, media_prompt & out);

// Encodes image `s` of `m` and decodes its embeddings into `ctx` at position `pos` of sequence
// `seq`, n_batch cells per decode (libmtmd's helper: M-RoPE positions, non-causal attention where
// the model wants it). Throws std::runtime_error with one line (an aborted decode included).
void media_eval(const media_prompt & m, llama_context * ctx, const media_span & s, llama_pos pos, int32_t seq, int32_t n_batch);

}  // namespace bmoe
