#pragma once
// The seam between the decode loop (runtime/generator) and whatever measures a decode from
// below it (the expert streamer): the generator calls it around each llama_decode.
#include "bmoe/stream/token_metrics.h"

#include <atomic>
#include <string>

namespace bmoe {

// Per-decode counters from a pluggable source (the expert streamer fills the I/O and cache
// fields; resident runs leave them zero).
struct decode_observer {
    virtual ~decode_observer() = default;
    // `abort` is the generator's flag: the observer raises it to stop a decode it cannot finish.
    virtual void begin_decode(std::atomic<bool> * abort) = 0;
    virtual void end_decode(token_metrics & m) = 0;
    // Why the last decode was aborted by the observer ("" if it was not).
    virtual std::string error() const = 0;
};

}  // namespace bmoe
