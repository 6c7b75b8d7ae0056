#include "bmoe/sys/huge_pages.h"

#include "bmoe/sys/proc_maps.h"

#include <sys/mman.h>

#include <algorithm>

namespace bmoe {

std::vector<mem_range> anon_mappings() {
    std::vector<mem_range> out;
    for (const proc_mapping & m : proc_mappings()) {
        // Anonymous: no file and no name ([heap], [stack] and the like are left out), or a name
        // given to anonymous memory ([anon:...], prctl PR_SET_VMA_ANON_NAME).
        const bool anon = m.inode == 0 && (m.name.empty() || m.name.rfind("[anon:", 0) == 0);
        if (anon && m.perms == "rw-p") out.push_back({ m.start, m.end });
    }
    return out;
}

std::vector<mem_range> new_huge_ranges(const std::vector<mem_range> & before, const std::vector<mem_range> & now, size_t min_bytes, size_t huge) {
    std::vector<mem_range> old = before;
    std::sort(old.begin(), old.end(), [](const mem_range & a, const mem_range & b) { return a.start < b.start; });
    std::vector<mem_range> out;
    const auto keep = [&](uintptr_t s, uintptr_t e) {
        const uintptr_t a = (s + huge - 1) & ~(uintptr_t) (huge - 1);
        const uintptr_t b = e & ~(uintptr_t) (huge - 1);
        if (b > a && b - a >= min_bytes) out.push_back({ a, b });
    };
    for (const mem_range & r : now) {
        uintptr_t s = r.start;
        for (const mem_range & o : old) {
            if (o.end <= s) continue;
            if (o.start >= r.end) break;
            if (o.start > s) keep(s, o.start);
            s = std::max(s, o.end);
            if (s >= r.end) break;
        }
        if (s < r.end) keep(s, r.end);
    }
    return out;
}

size_t advise_huge(const std::vector<mem_range> & ranges) {
    size_t bytes = 0;
#ifdef MADV_HUGEPAGE
    for (const mem_range & r : ranges) {
        if (madvise(reinterpret_cast<void *>(r.start), r.end - r.start, MADV_HUGEPAGE) == 0) bytes += r.end - r.start;
    }
#else
    (void) ranges;
#endif
    return bytes;
}

}  // namespace bmoe
