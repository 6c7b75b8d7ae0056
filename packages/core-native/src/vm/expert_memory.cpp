#include "bmoe/vm/expert_memory.h"

#include "bmoe/sys/file_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace bmoe {

namespace {

std::string errno_str(const char * what) {
    return std::string(what) + ": " + std::strerror(errno);
}

uintptr_t page_floor(uintptr_t a, uint64_t page) { return a & ~(uintptr_t) (page - 1); }
uintptr_t page_ceil(uintptr_t a, uint64_t page) { return (a + page - 1) & ~(uintptr_t) (page - 1); }

int make_memfd() {
#ifdef SYS_memfd_create
    const int fd = (int) syscall(SYS_memfd_create, "bmoe-experts", 1u /* MFD_CLOEXEC */);
    if (fd >= 0) return fd;
#endif
    // No memfd (old kernels): an unlinked temp file in /dev/shm behaves the same.
    char tmpl[] = "/dev/shm/bmoe-experts-XXXXXX";
    const int fd2 = mkstemp(tmpl);
    if (fd2 >= 0) unlink(tmpl);
    return fd2;
}

}  // namespace

expert_memory::~expert_memory() {
    if (memfd >= 0) close(memfd);
}

uint8_t * find_mapping_base(const std::string & path, const std::vector<file_vma> & before) {
    for (const file_vma & v : file_mappings(path)) {
        const bool old = std::any_of(before.begin(), before.end(), [&](const file_vma & b) { return b.start == v.start; });
        if (!old) return (uint8_t *) (v.start - v.file_offset);
    }
    return nullptr;
}

void expert_memory::setup(const std::vector<uint8_t *> & mapping_bases, const expert_layout & L, const std::vector<int> & fds) {
    bases = mapping_bases;
    page = (uint64_t) sysconf(_SC_PAGESIZE);
    // Merge the tensors' page ranges: adjacent expert tensors share their boundary page (never
    // across shards: each has its own mapping and file).
    struct range { int32_t shard; uintptr_t lo, hi; };
    std::vector<range> ranges;
    for (const auto & t : L.tensors) {
        const uintptr_t lo = page_floor((uintptr_t) addr(t, t.file_offset), page);
        const uintptr_t hi = page_ceil((uintptr_t) addr(t, t.file_offset + t.bytes), page);
        if (!ranges.empty() && ranges.back().shard == t.shard && lo <= ranges.back().hi) {
            ranges.back().hi = std::max(ranges.back().hi, hi);
        } else {
            ranges.push_back({ t.shard, lo, hi });
        }
    }
    for (const auto & r : ranges) {
        // Edge pages may hold bytes of dense neighbours: keep a copy before the remap.
        const layout_shard & sh = L.shards[(size_t) r.shard];
        const uintptr_t edges[2] = { r.lo, r.hi - page };
        std::vector<std::vector<uint8_t>> saved;
        for (uintptr_t e : edges) {
            const uint64_t off = (uint64_t) (e - (uintptr_t) bases[(size_t) r.shard]);
            const uint64_t n   = std::min<uint64_t>(page, sh.file_size - std::min(sh.file_size, off));
            std::vector<uint8_t> buf(page, 0);
            if (n > 0 && pread(fds[(size_t) r.shard], buf.data(), n, (off_t) off) != (ssize_t) n) {
                throw std::runtime_error(sh.path + ": " + errno_str("reading an expert boundary page"));
            }
            saved.push_back(std::move(buf));
        }
        void * p = mmap((void *) r.lo, r.hi - r.lo, PROT_READ | PROT_WRITE,
                        MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            throw std::runtime_error(errno_str("mmap over the expert tensors"));
        }
        std::memcpy((void *) edges[0], saved[0].data(), page);
        if (edges[1] != edges[0]) {
            std::memcpy((void *) edges[1], saved[1].data(), page);
        }
        anon_fixed_bytes += edges[1] != edges[0] ? 2 * page : page;
    }
    memfd = make_memfd();
    if (memfd < 0) {
        throw std::runtime_error(errno_str("memfd_create for the expert cache"));
    }
    // Slot layout: one sub-range per tensor-in-layer index, sized for the largest interior.
    std::vector<int32_t> layer_pos(L.tensors.size());
    std::vector<uint64_t> max_own;
    std::vector<int32_t> seen(L.n_layer > 0 ? L.n_layer : 1, 0);
    for (size_t i = 0; i < L.tensors.size(); i++) {
        const auto & t = L.tensors[i];
        if (t.layer < 0 || t.layer >= (int32_t) seen.size()) {
            throw std::runtime_error(L.path + ": tensor " + t.name + " names layer " + std::to_string(t.layer) +
                                     " but the model has " + std::to_string(seen.size()));
        }
        const int32_t j = seen[t.layer]++;
        if ((size_t) j >= max_own.size()) max_own.resize(j + 1, 0);
        for (int32_t e = 0; e < L.n_expert; e++) {
            const slice_span s = span(t, e);
            max_own[j] = std::max<uint64_t>(max_own[j], (uint64_t) (s.own_hi - s.own_lo));
        }
    }
    sub_off.assign(max_own.size(), 0);
    slot_bytes = 0;
    for (size_t j = 0; j < max_own.size(); j++) {
        sub_off[j] = slot_bytes;
        slot_bytes += max_own[j];
    }
}

slice_span expert_memory::span(const expert_tensor & t, int32_t expert) const {
    slice_span s;
    const uint64_t off = t.file_offset + (uint64_t) expert * t.slice_bytes;
    s.addr     = addr(t, off);
    s.len      = t.slice_bytes;
    s.read_off = off & ~(page - 1);
    s.read_lo  = addr(t, s.read_off);
    s.read_hi  = (uint8_t *) page_ceil((uintptr_t) (s.addr + s.len), page);
    s.own_lo   = (uint8_t *) page_ceil((uintptr_t) s.addr, page);
    s.own_hi   = (uint8_t *) page_floor((uintptr_t) (s.addr + s.len), page);
    if (s.own_hi < s.own_lo) s.own_hi = s.own_lo;
    return s;
}

void expert_memory::resize_pool(int32_t n) {
    if (ftruncate(memfd, (off_t) ((uint64_t) n * slot_bytes)) != 0) {
        throw std::runtime_error(errno_str("sizing the expert cache pool"));
    }
    n_slots = n;
}

uint64_t expert_memory::make_dense_anonymous(const expert_layout & L, int32_t shard, int fd) {
    // Dense page ranges: the tensor data minus the pages wholly inside expert tensors. Pages an
    // expert tensor shares with a dense neighbour are copied too: they hold dense bytes.
    const layout_shard & sh = L.shards[(size_t) shard];
    uint8_t * const base = bases[(size_t) shard];
    std::vector<std::pair<uint64_t, uint64_t>> expert_pages;
    for (const auto & t : L.tensors) {
        if (t.shard != shard) continue;
        const uint64_t lo = (t.file_offset + page - 1) & ~(page - 1);
        const uint64_t hi = (t.file_offset + t.bytes) & ~(page - 1);
        if (hi <= lo) continue;
        if (!expert_pages.empty() && lo <= expert_pages.back().second) {
            expert_pages.back().second = std::max(expert_pages.back().second, hi);
        } else {
            expert_pages.emplace_back(lo, hi);
        }
    }
    const uint64_t end = (sh.file_size + page - 1) & ~(page - 1);
    uint64_t pos = sh.data_offset & ~(page - 1), copied = 0;
    auto copy_range = [&](uint64_t lo, uint64_t hi) {
        if (hi <= lo) return;
        const uint64_t len = hi - lo;
        // Fill a fresh mapping, then move it over the file pages in one step.
        void * tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tmp == MAP_FAILED) throw std::runtime_error(errno_str("allocating anonymous memory for the dense weights"));
        uint64_t done = 0;
        while (done < len && lo + done < sh.file_size) {
            const ssize_t n = pread(fd, (uint8_t *) tmp + done, (size_t) std::min<uint64_t>(len - done, 64ull << 20), (off_t) (lo + done));
            if (n <= 0) {
                munmap(tmp, len);
                throw std::runtime_error(sh.path + ": " + errno_str("reading the dense weights"));
            }
            done += (uint64_t) n;
        }
        if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, base + lo) == MAP_FAILED) {
            munmap(tmp, len);
            throw std::runtime_error(errno_str("moving the dense weights into place"));
        }
        copied += len;
    };
    for (const auto & r : expert_pages) {
        copy_range(pos, std::min(r.first, end));
        pos = std::max(pos, r.second);
    }
    copy_range(pos, end);
    return copied;
}

void expert_memory::unmap_unit(const std::vector<const expert_tensor *> & layer_tensors, int32_t expert) {
    for (size_t j = 0; j < layer_tensors.size(); j++) {
        const slice_span s = span(*layer_tensors[j], expert);
        const uint64_t len = (uint64_t) (s.own_hi - s.own_lo);
        if (len == 0) continue;
        void * p = mmap(s.own_lo, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            throw std::runtime_error(errno_str("releasing an expert cache slot"));
        }
    }
}

}  // namespace bmoe
