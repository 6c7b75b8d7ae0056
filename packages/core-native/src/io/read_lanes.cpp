#include "bmoe/io/read_lanes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace bmoe {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

}  // namespace

// Opens one lane's descriptor on `path`: O_DIRECT unless refused (then buffered, with a warning).
int read_lanes::open_file(const std::string & path) {
    int fd = -1;
#ifdef O_DIRECT
    if (odirect) {
        fd = open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0 && (errno == EINVAL || errno == EOPNOTSUPP)) {
            odirect = false;
            warning = path + ": O_DIRECT is not supported here (" + std::strerror(errno) + "); reading through the page cache";
        }
    }
#else
    odirect = false;
#endif
    if (fd < 0) {
        fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd >= 0 && !odirect) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    }
    return fd;
}

read_lanes::read_lanes(const std::vector<std::string> & ps, int32_t n_lanes, bool want_odirect) : paths(ps), odirect(want_odirect) {
    for (const std::string & path : paths) {
        struct stat st{};
        if (stat(path.c_str(), &st) != 0) {
            throw std::runtime_error(path + ": " + std::strerror(errno));
        }
        file_sizes.push_back((uint64_t) st.st_size);
    }
    for (int32_t i = 0; i < n_lanes; i++) {
        for (const std::string & path : paths) {
            const int fd = open_file(path);
            if (fd < 0) {
                const std::string why = std::strerror(errno);
                for (int f : fds) close(f);
                throw std::runtime_error(path + ": " + why);
            }
            fds.push_back(fd);
        }
    }
    for (int32_t i = 0; i < n_lanes; i++) {
        threads.emplace_back([this, i]() { lane_main(i); });
    }
}

read_lanes::~read_lanes() {
    {
        std::lock_guard<std::mutex> lock(mu);
        stopping = true;
    }
    cv_work.notify_all();
    for (auto & t : threads) t.join();
    for (int fd : fds) close(fd);
}

void read_lanes::submit(const read_task & t) {
    {
        std::lock_guard<std::mutex> lock(mu);
        queue.push_back(t);
    }
    cv_work.notify_one();
}

void read_lanes::submit_all(const std::vector<read_task> & ts) {
    if (ts.empty()) return;
    {
        std::lock_guard<std::mutex> lock(mu);
        queue.insert(queue.end(), ts.begin(), ts.end());
    }
    cv_work.notify_all();
}

bool read_lanes::wait(const slice_state & s) {
    uint8_t st = s.status.load(std::memory_order_acquire);
    if (st == SLICE_READY) return true;
    // Short spin on the flag without system calls (sched_yield is a trip into the kernel, which a
    // paravirtualized guest pays dearly for: the overlap profile in docs/benchmarks.md); then sleep
    // on the condition. The flag changes under `mu`, so a sleeper cannot miss its wake-up.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (int i = 0; st == SLICE_READING; i++) {
        cpu_relax();
        st = s.status.load(std::memory_order_acquire);
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
    }
    if (st == SLICE_READING) {
        std::unique_lock<std::mutex> lock(mu);
        cv_done.wait(lock, [&]() { return s.status.load(std::memory_order_acquire) != SLICE_READING; });
        st = s.status.load(std::memory_order_acquire);
    }
    return st == SLICE_READY;
}

size_t read_lanes::cancel(slice_state * first, size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    size_t dropped = 0;
    for (auto it = queue.begin(); it != queue.end();) {
        if (it->state >= first && it->state < first + n) {
            it->state->status.store(SLICE_ABSENT, std::memory_order_release);
            it = queue.erase(it);
            dropped++;
        } else {
            ++it;
        }
    }
    lock.unlock();
    if (dropped > 0) cv_done.notify_all(); // a waiter sees ABSENT
    return dropped;
}

std::string read_lanes::error() const {
    std::lock_guard<std::mutex> lock(const_cast<std::mutex &>(mu));
    return first_error;
}

bool read_lanes::read_range(int32_t file, int fd, uint8_t * dst, uint64_t off, uint64_t len, std::string & err) {
    const std::string & path = paths[(size_t) file];
    const uint64_t file_size = file_sizes[(size_t) file];
    uint64_t done = 0;
    while (done < len) {
        const ssize_t n = pread(fd, dst + done, (size_t) (len - done), (off_t) (off + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            err = path + ": read of " + std::to_string(len) + " bytes at offset " + std::to_string(off) + " failed: " + std::strerror(errno);
            return false;
        }
        if (n == 0) {
            // End of file: the last page of the file is partial; anything short of it is truncation.
            if (off + done >= file_size) break;
            struct stat st{};
            fstat(fd, &st);
            err = path + ": the file ended at byte " + std::to_string(off + done) + " while reading an expert (it has " +
                  std::to_string((uint64_t) st.st_size) + " bytes now, " + std::to_string(file_size) + " at load): truncated or replaced";
            return false;
        }
        done += (uint64_t) n;
    }
    if (off + len > file_size && off + done < file_size) {
        err = path + ": short read at offset " + std::to_string(off + done);
        return false;
    }
    return true;
}

void read_lanes::lane_main(int idx) {
    const int * lane_fds = fds.data() + (size_t) idx * paths.size();
    // This lane's page-aligned buffer for reads that are converted (read_task::convert_*): the read
    // lands here and the conversion writes the slot, one pass over the bytes instead of a copy first.
    std::unique_ptr<uint8_t, decltype(&free)> scratch(nullptr, &free);
    uint64_t scratch_len = 0;
    for (;;) {
        read_task t;
        {
            std::unique_lock<std::mutex> lock(mu);
            cv_work.wait(lock, [&]() { return stopping || !queue.empty(); });
            if (stopping && queue.empty()) return;
            t = queue.front();
            queue.pop_front();
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::string err;
        if (!t.state) {
            // Deferred release of an evicted unit's pages.
            std::lock_guard<std::mutex> lock(vm_mu);
            if (t.unmap_gen->load() == t.unmap_expect) {
                mmap(t.unmap_addr, t.unmap_len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            }
            busy_ns += (uint64_t) std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
            continue;
        }
        bool ok = true;
        if (t.map_len > 0 &&
            mmap(t.map_addr, t.map_len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED | MAP_POPULATE, t.map_fd, (off_t) t.map_off) == MAP_FAILED) {
            ok  = false;
            err = std::string("mapping an expert cache slot: ") + std::strerror(errno) + (errno == ENOMEM ? " (vm.max_map_count reached?)" : "");
        }
        uint8_t * into = t.dst;
        if (ok && t.convert_len > 0 && scratch_len < t.len) {
            void * p = nullptr;
            if (posix_memalign(&p, 4096, t.len) != 0) {
                ok  = false;
                err = "allocating " + std::to_string(t.len) + " bytes for a read lane's conversion buffer failed";
            } else {
                scratch.reset((uint8_t *) p);
                scratch_len = t.len;
            }
        }
        if (ok && t.convert_len > 0) into = scratch.get();
        ok = ok && read_range(t.file, lane_fds[t.file], into, t.file_off, t.len, err);
        if (ok && t.convert_len > 0) {
            if (!convert || !convert(t.convert_arg, t.dst + t.convert_off, into + t.convert_off, t.convert_len)) {
                ok  = false;
                err = paths[(size_t) t.file] + ": converting " + std::to_string(t.convert_len) + " bytes read at offset " +
                      std::to_string(t.file_off) + " into the repacked layout failed";
            }
        }
        busy_ns += (uint64_t) std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
        if (ok) {
            bytes_read += t.len;
        }
        {
            // Under `mu`: a waiter checks the flag under it before it sleeps, so it cannot sleep
            // through this store. (A store-then-check-a-counter protocol without the lock relies on
            // store→load ordering, which qemu-user's arm64 emulation on x86 did not give: a
            // streamed run hung there.) notify_all costs no system call when nobody sleeps.
            std::lock_guard<std::mutex> lock(mu);
            if (!ok && first_error.empty()) first_error = err;
            t.state->status.store(ok ? SLICE_READY : SLICE_FAILED, std::memory_order_release);
        }
        cv_done.notify_all();
    }
}

}  // namespace bmoe
