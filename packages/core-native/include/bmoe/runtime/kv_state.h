#pragma once
// One sequence's KV cache on disk (llama.cpp's sequence state API), with the tokens it holds, the
// images among them, and an identity the caller writes (the model and the context parameters, as
// text): a conversation saved and resumed later, or a server slot evicted and restored. The file:
//   "BMOEKV02" | u32 meta length | meta | u32 token count | tokens (i32) |
//   u32 image count | images (u32 start, i32 cells, i32 positions, i32 id) |
//   u64 state length | state | u64 checksum of everything before it
// ("BMOEKV01" files, without the image section, still load.)
// Written to a temporary file beside `path`, synced and renamed over it: a crash or a full disk
// never leaves a half-written state under the name.
#include "bmoe/runtime/media.h"

#include "llama.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

// Throws std::runtime_error naming the path and the problem (a full disk, a missing directory).
// Returns the bytes written.
uint64_t kv_state_save(llama_context * ctx, int32_t seq, const std::vector<llama_token> & tokens,
                       const std::vector<media_span> & media, const std::string & meta, const std::string & path);

// What a state file restores: the tokens and the images among them (no chunk: already evaluated).
struct kv_saved {
    std::vector<llama_token> tokens;
    std::vector<media_span>  media;
};

// Reads `path` into sequence `seq` and returns its tokens and images. The file must carry exactly `meta`,
// its checksum must match and its tokens fit the sequence's context; a file that fails these
// checks leaves the sequence as it was, one llama.cpp refuses leaves it empty; the error
// (std::runtime_error) names the path and the problem.
kv_saved kv_state_load(llama_context * ctx, int32_t seq, const std::string & meta, const std::string & path);

// The meta text of a state file (its header only), for a caller that explains a mismatch.
std::string kv_state_meta(const std::string & path);

}  // namespace bmoe
