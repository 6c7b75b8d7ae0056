#include "bmoe/vm/slot_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace bmoe {

namespace {

constexpr uint64_t huge_bytes = (uint64_t) 2 << 20;

std::string errno_what(const char * what) {
    return std::string(what) + ": " + std::strerror(errno);
}

// Faults in every page of [p, p + len) for writing: one call where the kernel has it, else one
// write per page (the slots are fresh zero pages, so writing zero changes nothing).
void populate(uint8_t * p, uint64_t len) {
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return;
    const long page = sysconf(_SC_PAGESIZE);
    for (uint64_t off = 0; off < len; off += (uint64_t) page) reinterpret_cast<volatile uint8_t *>(p)[off] = 0;
}

}  // namespace

slot_pool::~slot_pool() {
    if (reserved) munmap(reserved, reserved_bytes);
}

void slot_pool::init(const std::vector<uint64_t> & sub_bytes, int32_t max, bool huge) {
    sub_off.assign(sub_bytes.size(), 0);
    slot_bytes = 0;
    for (size_t j = 0; j < sub_bytes.size(); j++) {
        sub_off[j] = slot_bytes;
        slot_bytes += sub_bytes[j];
    }
    max_slots  = max;
    huge_pages = huge;
    reserved_bytes = (uint64_t) max_slots * slot_bytes + huge_bytes;
    void * p = mmap(nullptr, reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(errno_what("reserving address space for the expert cache"));
    reserved = (uint8_t *) p;
    base     = (uint8_t *) (((uintptr_t) reserved + huge_bytes - 1) & ~(uintptr_t) (huge_bytes - 1));
}

void slot_pool::resize(int32_t n) {
    if (n > max_slots) n = max_slots;
    if (n == n_slots) return;
    if (n > n_slots) {
        const uint64_t off = (uint64_t) n_slots * slot_bytes, len = (uint64_t) (n - n_slots) * slot_bytes;
        if (mmap(base + off, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
            throw std::runtime_error(errno_what("mapping the expert cache"));
        }
        // A child process (a spawn from the event loop) never needs the cache: without this, a
        // fork would mark every slot page copy-on-write and the next read into it would fault.
        madvise(base + off, len, MADV_DONTFORK);
        // Advice first: a page populated before it is a 4 KiB page for good.
        if (huge_pages) madvise(base + off, len, MADV_HUGEPAGE);
        populate(base + off, len);
    } else {
        // Released: the range goes back to reserved address space, its pages to the kernel.
        const uint64_t off = (uint64_t) n * slot_bytes, len = (uint64_t) (n_slots - n) * slot_bytes;
        if (mmap(base + off, len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
            throw std::runtime_error(errno_what("shrinking the expert cache"));
        }
    }
    n_slots = n;
}

}  // namespace bmoe
