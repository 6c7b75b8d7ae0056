#pragma once
// The expert cache's memory when experts are redirected (patch 0002's hook returns each expert's
// address): slots at fixed virtual addresses in one reserved range of private anonymous memory.
// A slot's pages are mapped and populated once; a miss reads into the slot and moves no mapping,
// so neither the kernel nor a hypervisor that shadows page tables pays anything per page again.
// The range starts on a 2 MiB boundary and, with `huge_pages`, is advised MADV_HUGEPAGE before
// it is populated: cached experts are computed from huge pages as a resident model's repacked
// weights are (sys/huge_pages.h), so a token at 100 % hits costs what a resident one does.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bmoe {

struct slot_pool {
    uint8_t *             reserved   = nullptr; // what mmap gave (base is it, aligned up)
    uint64_t              reserved_bytes = 0;
    uint8_t *             base       = nullptr; // reserved range of `max_slots` slots
    uint64_t              slot_bytes = 0;
    int32_t               max_slots  = 0;
    int32_t               n_slots    = 0;
    bool                  huge_pages = false;
    std::vector<uint64_t> sub_off;              // per tensor-in-layer index

    slot_pool() = default;
    slot_pool(const slot_pool &) = delete;
    slot_pool & operator=(const slot_pool &) = delete;
    ~slot_pool();

    // Reserves address space for `max_slots` slots of the given per-projection sizes (page multiples).
    void init(const std::vector<uint64_t> & sub_bytes, int32_t max_slots, bool huge_pages);
    // Grows (maps and populates the new slots) or shrinks (releases their pages).
    void resize(int32_t n);
    uint8_t * addr(int32_t slot, size_t j) const { return base + (uint64_t) slot * slot_bytes + sub_off[j]; }
};

}  // namespace bmoe
