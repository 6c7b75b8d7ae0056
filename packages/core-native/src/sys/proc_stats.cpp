#include "bmoe/sys/proc_stats.h"

#include <fcntl.h>
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
    // Read after every decode on the generator's thread, which is also a compute thread: the file
    // stays open (pread has no shared offset, so contexts' threads can read it at once) instead of
    // an fopen, a read and an fclose per token.
    static const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    static const long page = sysconf(_SC_PAGESIZE);
    if (fd < 0) {
        return 0;
    }
    char buf[128];
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    unsigned long long size = 0, resident = 0;
    return std::sscanf(buf, "%llu %llu", &size, &resident) == 2 ? (uint64_t) resident * (uint64_t) page : 0;
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
