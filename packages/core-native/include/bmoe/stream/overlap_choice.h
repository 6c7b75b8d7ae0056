#pragma once
// Whether a decode overlaps its expert reads with expert compute (--overlap / --no-overlap /
// auto). Overlap wins where the reads and the compute can really run side by side and loses where
// they fight for the same cores or memory bandwidth (measured on the 2-core VM: 0.70–0.92 of
// serial at cache 0, 1.09× slower at a 24 % cache in one run, docs/benchmarks.md), and which one
// holds depends on the disk, the cache and what else the phone is doing. So "auto" does not
// guess: it times one-token decodes both ways, interleaved (serial, overlap, serial, ...), picks
// overlap only when its median is faster, and asks again every `reprobe_every` tokens, because
// the cache warms and the machine changes. Pure: unit-tested (test/cpp/test_overlap_choice.cpp).
#include <cstdint>
#include <vector>

namespace bmoe {

enum class overlap_mode { off, on, automatic };

struct overlap_choice {
    explicit overlap_choice(overlap_mode mode, int32_t probe_per_arm = 4, int32_t reprobe_every = 128);

    // The mode of the next decode (call once per decode, before it).
    bool next();
    // How that decode went: `one_token` decodes are the ones timed (a prompt's ubatch is not
    // comparable with the next token's); `wall_ms` its wall time.
    void record(bool overlapped, bool one_token, double wall_ms);

    // The choice in force after the last probe (true: overlap); false before the first probe ends.
    bool chosen() const { return choice; }
    bool probing() const { return probing_now; }
    // Medians of the last probe, ms (0 before one).
    double serial_median_ms() const { return last_serial_ms; }
    double overlap_median_ms() const { return last_overlap_ms; }

  private:
    overlap_mode        mode;
    int32_t             probe_per_arm;
    int32_t             reprobe_every;
    bool                probing_now  = true;
    bool                choice       = false;
    bool                pending      = false;  // the mode next() handed out
    int32_t             since_probe  = 0;      // timed decodes since the last probe ended
    std::vector<double> serial, overlapped;
    double              last_serial_ms = 0, last_overlap_ms = 0;
};

}  // namespace bmoe
