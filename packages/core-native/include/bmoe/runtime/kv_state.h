#pragma once
// One sequence's KV cache on disk (llama.cpp's sequence state API), with the tokens it holds and
// an identity the caller writes (the model and the context parameters, as text): a conversation
// saved and resumed later, or a server slot evicted and restored. The file:
//   "BMOEKV01" | u32 meta length | meta | u32 token count | tokens (i32) | u64 state length | state |
//   u64 checksum of everything before it
// Written to a temporary file beside `path`, synced and renamed over it: a crash or a full disk
// never leaves a half-written state under the name.
#include "llama.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

// Throws std::runtime_error naming the path and the problem (a full disk, a missing directory).
// Returns the bytes written.
uint64_t kv_state_save(llama_context * ctx, int32_t seq, const std::vector<llama_token> & tokens, const std::string & meta,
                       const std::string & path);

// Reads `path` into sequence `seq` and returns its tokens. The file must carry exactly `meta`,
// its checksum must match and its tokens fit the sequence's context; a file that fails these
// checks leaves the sequence as it was, one llama.cpp refuses leaves it empty; the error
// (std::runtime_error) names the path and the problem.
std::vector<llama_token> kv_state_load(llama_context * ctx, int32_t seq, const std::string & meta, const std::string & path);

// The meta text of a state file (its header only), for a caller that explains a mismatch.
std::string kv_state_meta(const std::string & path);

}  // namespace bmoe
