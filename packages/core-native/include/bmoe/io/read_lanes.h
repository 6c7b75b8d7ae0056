#pragma once
// Parallel read lanes: N threads, each with its own descriptor on every file of the model, reading
// page-aligned ranges straight into place with O_DIRECT (buffered where O_DIRECT is refused).
// A slice's completion is published through its `slice_state`; waiters block on a condition.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bmoe {

enum slice_status : uint8_t { SLICE_ABSENT = 0, SLICE_READING = 1, SLICE_READY = 2, SLICE_FAILED = 3 };

struct slice_state {
    std::atomic<uint8_t> status{ SLICE_ABSENT };
};

// A lane's unit of work. Page-table work rides along so it runs on the lanes, in parallel with
// other lanes' reads, instead of on the decode thread:
//  - map_len > 0: map `map_fd` at `map_addr` (MAP_FIXED | MAP_SHARED | MAP_POPULATE) before the read;
//  - state == nullptr: no read, only release `unmap_addr` back to untouched anonymous memory,
//    unless `*unmap_gen` moved on from `unmap_expect` (the unit came back and was mapped anew).
struct read_task {
    slice_state * state    = nullptr;
    int32_t       file     = 0;       // which of the lanes' files (a split model's shard)
    uint8_t *     dst      = nullptr; // page-aligned
    uint64_t      file_off = 0;       // page-aligned
    uint64_t      len      = 0;       // page multiple
    uint8_t *     map_addr = nullptr;
    uint64_t      map_len  = 0;
    int64_t       map_off  = 0;
    int           map_fd   = -1;
    // convert_len > 0: the read lands in the lane's own buffer and read_lanes::convert writes
    // [dst + convert_off, + convert_len) from it (e.g. llama.cpp's repacked layout); `convert_arg` its input.
    uint64_t      convert_off = 0;
    uint64_t      convert_len = 0;
    const void *  convert_arg = nullptr;
    uint8_t *              unmap_addr   = nullptr;
    uint64_t               unmap_len    = 0;
    const std::atomic<uint32_t> * unmap_gen = nullptr;
    uint32_t               unmap_expect = 0;
};

struct read_lanes {
    // `paths`: the model's files (one, or a split model's shards in order).
    read_lanes(const std::vector<std::string> & paths, int32_t n_lanes, bool odirect);
    ~read_lanes();
    read_lanes(const read_lanes &) = delete;
    read_lanes & operator=(const read_lanes &) = delete;

    void submit(const read_task & t);
    void submit_all(const std::vector<read_task> & ts);
    // Blocks until `s` is READY or FAILED; returns true when READY.
    bool wait(const slice_state & s);
    // Drops the queued (not yet started) reads into slices [first, first + n) and marks them
    // ABSENT; returns how many it dropped. A read a lane has started is left to finish.
    size_t cancel(slice_state * first, size_t n);

    // Conversion of a read (read_task::convert_*): writes `len` bytes at `data` from `copy`, the same
    // bytes as read, in the lane's buffer. Returns false when it cannot convert.
    using convert_fn = bool (*)(const void * arg, uint8_t * data, const uint8_t * copy, uint64_t len);
    convert_fn convert = nullptr;

    std::string warning;                      // set when O_DIRECT was refused
    std::string error() const;                // first read error, "" if none

    std::atomic<uint64_t> bytes_read{ 0 };
    std::atomic<uint64_t> busy_ns{ 0 };       // summed over lanes
    // Held while changing mappings under the expert region (lanes and the streamer).
    std::mutex vm_mu;

  private:
    void lane_main(int idx);
    bool read_range(int32_t file, int fd, uint8_t * dst, uint64_t off, uint64_t len, std::string & err);
    int  open_file(const std::string & path);

    std::vector<std::string> paths;
    bool                     odirect = true;
    std::vector<int>         fds;        // [lane * paths.size() + file]
    std::vector<std::thread> threads;
    std::mutex               mu;
    std::condition_variable  cv_work;
    std::condition_variable  cv_done;
    std::deque<read_task>    queue;
    bool                     stopping = false;
    std::string              first_error;
    std::vector<uint64_t>    file_sizes; // per file, at open
};

}  // namespace bmoe
