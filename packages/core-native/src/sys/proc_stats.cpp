#include "bmoe/sys/proc_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace bmoe {

proc_stats proc_stats_now() {
    proc_stats s;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        s.cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
        s.major_faults = (uint64_t) ru.ru_majflt;
        s.minor_faults = (uint64_t) ru.ru_minflt;
    }
    return s;
}

uint64_t proc_rss_bytes() {
    FILE * f = std::fopen("/proc/self/statm", "r");
    if (!f) {
        return 0;
    }
    unsigned long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    return n == 2 ? (uint64_t) resident * (uint64_t) sysconf(_SC_PAGESIZE) : 0;
}

uint64_t proc_peak_rss_bytes() {
    rusage ru{};
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t) ru.ru_maxrss * 1024 : 0;
}

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace bmoe
