#include "bmoe/vm/slot_pool.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace bmoe {

slot_pool::~slot_pool() {
    if (base) munmap(base, (uint64_t) max_slots * slot_bytes);
    if (memfd >= 0) close(memfd);
}

void slot_pool::init(const std::vector<uint64_t> & sub_bytes, int32_t max) {
    sub_off.assign(sub_bytes.size(), 0);
    slot_bytes = 0;
    for (size_t j = 0; j < sub_bytes.size(); j++) {
        sub_off[j] = slot_bytes;
        slot_bytes += sub_bytes[j];
    }
    max_slots = max;
#ifdef SYS_memfd_create
    memfd = (int) syscall(SYS_memfd_create, "bmoe-expert-slots", 1u /* MFD_CLOEXEC */);
#endif
    if (memfd < 0) {
        char tmpl[] = "/dev/shm/bmoe-slots-XXXXXX";
        memfd = mkstemp(tmpl);
        if (memfd >= 0) unlink(tmpl);
    }
    if (memfd < 0) throw std::runtime_error(std::string("memfd_create for the expert cache: ") + std::strerror(errno));
    void * p = mmap(nullptr, (uint64_t) max_slots * slot_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("reserving address space for the expert cache: ") + std::strerror(errno));
    base = (uint8_t *) p;
}

void slot_pool::resize(int32_t n) {
    if (n > max_slots) n = max_slots;
    if (n == n_slots) return;
    if (n > n_slots) {
        if (ftruncate(memfd, (off_t) ((uint64_t) n * slot_bytes)) != 0) {
            throw std::runtime_error(std::string("sizing the expert cache: ") + std::strerror(errno));
        }
        const uint64_t off = (uint64_t) n_slots * slot_bytes, len = (uint64_t) (n - n_slots) * slot_bytes;
        if (mmap(base + off, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED | MAP_POPULATE, memfd, (off_t) off) == MAP_FAILED) {
            throw std::runtime_error(std::string("mapping the expert cache: ") + std::strerror(errno));
        }
    } else {
        const uint64_t off = (uint64_t) n * slot_bytes, len = (uint64_t) (n_slots - n) * slot_bytes;
        mmap(base + off, len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (ftruncate(memfd, (off_t) off) != 0) {
            throw std::runtime_error(std::string("shrinking the expert cache: ") + std::strerror(errno));
        }
    }
    n_slots = n;
}

}  // namespace bmoe
