#include "bmoe/sys/meminfo.h"

#include <cstdio>

namespace bmoe {

uint64_t mem_available_bytes() {
    FILE * f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char               line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof(line), f)) {
        if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    }
    std::fclose(f);
    return (uint64_t) kb * 1024;
}

}  // namespace bmoe
