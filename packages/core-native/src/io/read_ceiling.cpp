#include "bmoe/io/read_ceiling.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace bmoe {

read_ceiling_result measure_read_ceiling(const std::string & path, int32_t lanes, uint64_t block_bytes, uint64_t total_bytes,
                                         uint64_t range_lo, uint64_t range_hi, bool odirect) {
    const uint64_t page = 4096;
    block_bytes = (block_bytes + page - 1) & ~(page - 1);
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": " + std::strerror(errno));
    const uint64_t size = (uint64_t) st.st_size;
    range_hi = range_hi ? std::min(range_hi, size) : size;
    range_lo &= ~(page - 1);
    if (range_hi <= range_lo + block_bytes) throw std::runtime_error(path + ": the range is smaller than one block");
    const uint64_t n_blocks = (total_bytes + block_bytes - 1) / block_bytes;

    read_ceiling_result res;
    res.odirect = odirect;
    std::vector<int> fds;
    for (int32_t i = 0; i < lanes; i++) {
        int fd = -1;
#ifdef O_DIRECT
        if (res.odirect) fd = open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0 && res.odirect) res.odirect = false;
#endif
        if (fd < 0) fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
        fds.push_back(fd);
    }
    std::atomic<uint64_t> next{ 0 }, bytes{ 0 };
    std::atomic<bool> failed{ false };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int32_t i = 0; i < lanes; i++) {
        threads.emplace_back([&, i]() {
            void * buf = nullptr;
            if (posix_memalign(&buf, page, block_bytes) != 0) { failed = true; return; }
            std::mt19937_64 rng(1234 + i);
            const uint64_t span = (range_hi - range_lo - block_bytes) / page;
            while (next.fetch_add(1) < n_blocks && !failed) {
                const uint64_t off = range_lo + (rng() % (span + 1)) * page;
                const ssize_t n = pread(fds[i], buf, block_bytes, (off_t) off);
                if (n <= 0) { failed = true; break; }
                bytes += (uint64_t) n;
            }
            std::free(buf);
        });
    }
    for (auto & t : threads) t.join();
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.bytes = bytes.load();
    for (int fd : fds) close(fd);
    if (failed) throw std::runtime_error(path + ": a read failed while measuring the read ceiling");
    return res;
}

}  // namespace bmoe
