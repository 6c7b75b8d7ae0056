#pragma once
// Where a model's expert tensors live in its GGUF file(s): read from the headers alone
// (gguf_init_from_file with no_alloc), never from the tensor data. A split model is one layout
// over all its shards; every tensor names the shard that holds it.
#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

enum class expert_proj : int32_t { gate = 0, up = 1, down = 2, gate_up = 3 };

const char * expert_proj_name(expert_proj p);

struct expert_tensor {
    std::string name;
    int32_t     layer       = 0;
    expert_proj proj        = expert_proj::gate;
    int32_t     shard       = 0;  // index into expert_layout::shards
    uint64_t    file_offset = 0;  // absolute offset of the tensor data in its shard's file
    uint64_t    bytes       = 0;
    uint64_t    slice_bytes = 0;  // one expert: bytes / n_expert (contiguous, nb[2])
    int32_t     type        = 0;  // ggml_type
    int64_t     ne[3]       = { 0, 0, 0 };  // [row length, rows per expert, experts]
    bool        repacked    = false;  // held in llama.cpp's CPU_REPACK layout (--repack; set by the streamer)
};

// One file of the model (the whole model unless it is split).
struct layout_shard {
    std::string path;
    uint64_t    file_size    = 0;
    uint64_t    data_offset  = 0; // start of the tensor data
    uint64_t    expert_bytes = 0;
    uint64_t    dense_bytes  = 0;
};

struct expert_layout {
    std::string                path;              // the model's name: its (first) file
    std::string                arch;
    int32_t                    n_layer       = 0;
    int32_t                    n_expert      = 0;
    int32_t                    n_expert_used = 0;
    uint64_t                   file_size     = 0; // all shards
    uint64_t                   expert_bytes  = 0; // all expert tensors
    uint64_t                   dense_bytes   = 0; // every other tensor
    std::vector<layout_shard>  shards;            // one per file, in split order
    std::vector<expert_tensor> tensors;           // sorted by (shard, file offset)

    // Bytes of one expert of `layer`, all its projections (the unit the cache moves).
    uint64_t unit_bytes(int32_t layer) const;
    // Largest unit over the layers.
    uint64_t max_unit_bytes() const;
    // Layers that have expert tensors.
    int32_t n_moe_layers() const;
};

// Is `name` one of the streamed tensors (blk.N.ffn_{gate,up,down,gate_up}_exps.weight: the
// contract's expert_tensor_pattern, include/bmoe/contract/layout.h)?
bool expert_tensor_name(const std::string & name, int32_t * layer, expert_proj * proj);

// Reads the model named by `path` (a single file or the first shard of a split one; see
// model_files.h). Throws std::runtime_error naming the file on malformed input, a bad split or a
// model without experts.
expert_layout expert_layout_read(const std::string & path);

}  // namespace bmoe
