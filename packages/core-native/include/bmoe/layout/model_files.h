#pragma once
// The files of one model: a single GGUF, or every shard of a split GGUF named by its first shard
// (`<prefix>-00001-of-0000N.gguf`, llama.cpp's naming and `split.*` keys). Headers only; the
// tensor data is never read here.
#include "ggml.h"
#include "gguf.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bmoe {

struct gguf_context_deleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_context_deleter>;
struct ggml_context_deleter {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using ggml_ctx_ptr = std::unique_ptr<ggml_context, ggml_context_deleter>;

struct model_file {
    std::string path;
    uint64_t    file_size   = 0;
    uint64_t    data_offset = 0; // start of this file's tensor data: tensor offsets are relative to it
    gguf_ptr     header;         // no_alloc: names, types, offsets, metadata
    ggml_ctx_ptr meta;           // the tensors' descriptions (shapes), no data
};

// Opens and validates every file of the model named by `path`. Throws std::runtime_error with one
// line naming the file at fault: a shard other than the first given, a first shard not named as
// llama.cpp expects, a missing shard, a shard whose split.count / split.no disagree, a shard of
// another model (architecture, split.tensors.count, a tensor held twice, a wrong tensor total).
std::vector<model_file> model_files_open(const std::string & path);

// An integer metadata value of any width, or -1 when absent or not an integer.
int64_t gguf_int(const gguf_context * g, const std::string & key);

}  // namespace bmoe
