#pragma once
// Transparent huge pages for the weights llama.cpp copies into anonymous memory while it loads a
// resident model (the repacked layouts in CPU_REPACK buffers, or every weight without mmap).
//
// Why: a decode streams every dense weight and its routed experts through the cores once per
// token; with 4 KiB pages that is one TLB miss per 4 KiB, and in a VM each miss walks two page
// tables. Where THP is `madvise` (Debian's default, this VM's), malloc'd buffers get 4 KiB pages;
// the file mapping already gets large folios from the page cache. llama.cpp asks for nothing, so
// the advice is given from outside it: the anonymous ranges that appeared during the load, after
// its buffers are allocated and before they are filled (the load's first progress callback).
// A streamed load is left alone here: its repacked buffer also holds the expert tensors, touched
// one expert at a time in the fallback mode, where a 2 MiB page per touched expert would cost
// memory the budget does not count; its expert cache gets huge pages of its own (vm/slot_pool.h).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bmoe {

struct mem_range {
    uintptr_t start = 0;
    uintptr_t end   = 0;
};

// This process's private anonymous read-write mappings (/proc/self/maps); empty if unreadable.
std::vector<mem_range> anon_mappings();

// The parts of `now` that no range of `before` covers, each shrunk inward to whole huge pages
// (`huge` bytes, a power of two), keeping those of at least `min_bytes`. Pure: a new buffer may
// have merged with a neighbouring mapping, so ranges are subtracted, not matched.
std::vector<mem_range> new_huge_ranges(const std::vector<mem_range> & before, const std::vector<mem_range> & now, size_t min_bytes,
                                       size_t huge = (size_t) 2 << 20);

// madvise(MADV_HUGEPAGE) on each range; the bytes the kernel accepted (0 where THP is off or
// unsupported: nothing changes then).
size_t advise_huge(const std::vector<mem_range> & ranges);

}  // namespace bmoe
