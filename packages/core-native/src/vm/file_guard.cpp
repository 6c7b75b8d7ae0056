#include "bmoe/vm/file_guard.h"

#include "bmoe/sys/file_maps.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

namespace bmoe {

namespace {

// The handler reads this table without locks: fixed size, ranges written before `used` is set
// (release) and cleared after it is unset.
constexpr int kSlots  = 32;
constexpr int kRanges = 64;

struct guard_slot {
    std::atomic<bool> used{ false };
    std::atomic<bool> tripped{ false };
    int               n_ranges = 0;
    uintptr_t         lo[kRanges]{};
    uintptr_t         hi[kRanges]{};
};

guard_slot       g_slots[kSlots];
std::mutex       g_mutex;  // registration only
struct sigaction g_previous{};
bool             g_installed = false;

void chain_previous(int sig, siginfo_t * si, void * uc) {
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) {
            g_previous.sa_sigaction(sig, si, uc);
            return;
        }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    // Default action: restore it; returning re-executes the faulting access, which then kills us
    // as it would have without the guard.
    signal(sig, SIG_DFL);
}

void on_sigbus(int sig, siginfo_t * si, void * uc) {
    const uintptr_t a    = (uintptr_t) si->si_addr;
    const uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    for (guard_slot & s : g_slots) {
        if (!s.used.load(std::memory_order_acquire)) continue;
        for (int i = 0; i < s.n_ranges; i++) {
            if (a < s.lo[i] || a >= s.hi[i]) continue;
            // Pages after the faulting one map later file offsets: past the end of file too.
            const uintptr_t from = a & ~(page - 1);
            void * r = mmap((void *) from, s.hi[i] - from, PROT_READ | PROT_WRITE,
                            MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (r != MAP_FAILED) {
                s.tripped.store(true, std::memory_order_release);
                return;  // the access is retried and reads zeros
            }
        }
    }
    chain_previous(sig, si, uc);
}

void install_once() {
    if (g_installed) return;
    struct sigaction sa{};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags     = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_previous) == 0) g_installed = true;
}

int64_t mtime_ns_of(const struct stat & st) {
    return (int64_t) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

}  // namespace

file_guard::file_guard(const std::string & p) : path(p) {
    struct stat st{};
    if (stat(path.c_str(), &st) == 0) {
        dev      = st.st_dev;
        ino      = st.st_ino;
        size     = st.st_size;
        mtime_ns = mtime_ns_of(st);
    }
    const std::vector<file_vma> vmas = file_mappings(path);
    if (vmas.empty()) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    install_once();
    for (int i = 0; i < kSlots; i++) {
        guard_slot & s = g_slots[i];
        if (s.used.load()) continue;
        s.n_ranges = 0;
        s.tripped.store(false);
        for (const file_vma & v : vmas) {
            if (s.n_ranges == kRanges) break;
            s.lo[s.n_ranges] = v.start;
            s.hi[s.n_ranges] = v.end;
            s.n_ranges++;
        }
        s.used.store(true, std::memory_order_release);
        slot = i;
        return;
    }
}

file_guard::~file_guard() {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_slots[slot].used.store(false, std::memory_order_release);
}

std::string file_guard::check(bool stat_file) const {
    if (slot >= 0 && g_slots[slot].tripped.load(std::memory_order_acquire)) {
        return path + ": the model file was truncated while in use (a read past its new end); load it again";
    }
    if (!stat_file) return "";
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
        return path + ": the model file is gone (" + std::strerror(errno) + "); load it again";
    }
    if (st.st_dev != dev || st.st_ino != ino) {
        return "";  // replaced by another file (rename): our mapping still holds the old one
    }
    if (st.st_size != size || mtime_ns_of(st) != mtime_ns) {
        return path + ": the model file changed on disk while in use (size or modification time differs from load); load it again";
    }
    return "";
}

}  // namespace bmoe
