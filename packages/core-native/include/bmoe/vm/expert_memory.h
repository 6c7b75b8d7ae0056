#pragma once
// Engine-owned memory at the experts' canonical addresses inside llama.cpp's mapping of the model.
//
// llama.cpp computes an expert at `tensor->data + expert * nb[2]`, so a streamed expert must sit
// exactly there. After load, every expert tensor's pages are replaced by anonymous memory (no file
// pages, no RSS until written); a resident expert's interior pages are a slot of a memfd pool
// mapped in place with MAP_FIXED | MAP_SHARED. A slot's pages are allocated once and reused, so a
// miss costs one read and a remap, never a zero-fill fault per page. Pages a slice shares with a
// neighbour (tensor starts are only 32-byte aligned) stay in the anonymous layer, are never
// released, and hold file bytes whichever neighbour wrote them.
#include "bmoe/layout/expert_layout.h"
#include "bmoe/sys/file_maps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct slice_span {
    uint8_t * addr    = nullptr; // first byte of the slice (canonical address)
    uint64_t  len     = 0;
    uint64_t  read_off = 0;      // page-aligned file offset of the read
    uint8_t * read_lo = nullptr; // page-rounded destination [read_lo, read_hi)
    uint8_t * read_hi = nullptr;
    uint8_t * own_lo  = nullptr; // pages only this slice uses [own_lo, own_hi), may be empty
    uint8_t * own_hi  = nullptr;
};

struct expert_memory {
    std::vector<uint8_t *> bases;                // per shard: address of its file offset 0 in its mapping
    uint64_t               page       = 4096;
    int                    memfd      = -1;
    uint64_t               slot_bytes = 0;
    int32_t                n_slots    = 0;
    std::vector<uint64_t>  sub_off;              // per tensor-in-layer index: offset inside a slot
    uint64_t               anon_fixed_bytes = 0; // edge pages filled at setup

    expert_memory() = default;
    expert_memory(const expert_memory &) = delete;
    expert_memory & operator=(const expert_memory &) = delete;
    ~expert_memory();

    // Replaces the expert tensors' pages with anonymous memory and refills the edge pages that
    // hold non-expert bytes from each shard's descriptor in `fds`. Throws std::runtime_error.
    void setup(const std::vector<uint8_t *> & mapping_bases, const expert_layout & L, const std::vector<int> & fds);

    // Where a tensor's file offset `off` sits in memory.
    uint8_t * addr(const expert_tensor & t, uint64_t off) const { return bases[(size_t) t.shard] + off; }

    slice_span span(const expert_tensor & t, int32_t expert) const;

    // Pool of `n` slots; each holds one expert of any layer (all projections). Growing keeps
    // existing slots; shrinking requires slots >= n to be unmapped first.
    void resize_pool(int32_t n);

    // Offset in the memfd of projection `j` of slot `slot`.
    int64_t slot_offset(int32_t slot, size_t j) const { return (int64_t) ((uint64_t) slot * slot_bytes + sub_off[j]); }

    // Returns `layer`'s expert `expert` interiors to untouched anonymous memory (no RSS). Mapping a
    // slot in is done by a read lane (read_task::map_*), next to the read it precedes.
    void unmap_unit(const std::vector<const expert_tensor *> & layer_tensors, int32_t expert);

    // --dense-weights anon: every non-expert page of the tensor data becomes anonymous memory
    // holding the same bytes, so the page cache cannot evict the dense weights under pressure
    // (their re-faults would look like compute). Call after setup() (or with `bases` set), once
    // per shard. Returns the bytes copied.
    uint64_t make_dense_anonymous(const expert_layout & L, int32_t shard, int fd);
};

// Finds the address of file offset 0 of `path`'s mapping in this process (/proc/self/maps):
// base = start - offset of any VMA of that file (llama.cpp unmaps the header fragment, so an
// offset-0 VMA may not exist). nullptr when the file is not mapped.
// `before`: the file's mappings that existed before this model's load (another model of the same
// file, or one not freed yet): the base is this load's mapping, never theirs (remapping theirs
// would pull the weights out from under the other model).
uint8_t * find_mapping_base(const std::string & path, const std::vector<file_vma> & before);

}  // namespace bmoe
