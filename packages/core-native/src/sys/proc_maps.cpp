#include "bmoe/sys/proc_maps.h"

#include <cstdio>
#include <cstring>

namespace bmoe {

std::vector<proc_mapping> proc_mappings() {
    std::vector<proc_mapping> out;
    FILE * f = std::fopen("/proc/self/maps", "r");
    if (!f) return out;
    char line[4096];
    while (std::fgets(line, sizeof(line), f)) {
        unsigned long long start = 0, end = 0, off = 0, inode = 0;
        unsigned int       dmaj = 0, dmin = 0;
        char               perms[8] = { 0 };
        int                name_at  = 0;
        if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &dmaj, &dmin, &inode, &name_at) < 7) continue;
        proc_mapping m;
        m.start     = (uintptr_t) start;
        m.end       = (uintptr_t) end;
        m.perms     = perms;
        m.offset    = (uint64_t) off;
        m.dev_major = dmaj;
        m.dev_minor = dmin;
        m.inode     = (uint64_t) inode;
        if (name_at > 0) {
            m.name = line + name_at;
            while (!m.name.empty() && (m.name.back() == '\n' || m.name.back() == ' ')) m.name.pop_back();
        }
        out.push_back(std::move(m));
    }
    std::fclose(f);
    return out;
}

}  // namespace bmoe
