#include "bmoe/sys/file_maps.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>

namespace bmoe {

std::vector<file_vma> file_mappings(const std::string & path) {
    std::vector<file_vma> out;
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) return out;
    FILE * f = std::fopen("/proc/self/maps", "r");
    if (!f) return out;
    char line[4096];
    while (std::fgets(line, sizeof(line), f)) {
        unsigned long long start = 0, end = 0, off = 0, inode = 0;
        unsigned int       dmaj = 0, dmin = 0;
        char               perms[8] = { 0 };
        if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &off, &dmaj, &dmin, &inode) != 7) continue;
        // Device numbers in /proc/self/maps are major:minor of st_dev.
        if (inode != (unsigned long long) st.st_ino || makedev(dmaj, dmin) != st.st_dev) continue;
        out.push_back({ (uintptr_t) start, (uintptr_t) end, (uint64_t) off });
    }
    std::fclose(f);
    return out;
}

}  // namespace bmoe
