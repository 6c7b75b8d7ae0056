#include "bmoe/sys/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace bmoe {

std::vector<mem_range> anon_mappings() {
    std::vector<mem_range> out;
    FILE * f = std::fopen("/proc/self/maps", "r");
    if (!f) return out;
    char line[4096];
    while (std::fgets(line, sizeof(line), f)) {
        unsigned long long start = 0, end = 0, off = 0, inode = 0;
        unsigned int       dmaj = 0, dmin = 0;
        char               perms[8] = { 0 };
        int                name_at  = 0;
        if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &dmaj, &dmin, &inode, &name_at) < 7) continue;
        // Anonymous: no inode and no name ([heap], [stack] and the like are left out too), or a
        // name given to anonymous memory ([anon:...], prctl PR_SET_VMA_ANON_NAME).
        const char * name  = line + name_at;
        const bool   named = name_at > 0 && *name != '\0' && *name != '\n' && std::strncmp(name, "[anon:", 6) != 0;
        if (inode != 0 || named || std::strcmp(perms, "rw-p") != 0) continue;
        out.push_back({ (uintptr_t) start, (uintptr_t) end });
    }
    std::fclose(f);
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
