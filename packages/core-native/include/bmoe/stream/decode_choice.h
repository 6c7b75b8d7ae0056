#pragma once
// How each decode streams: whether it overlaps its expert reads with expert compute (--overlap /
// --no-overlap) and whether it reads the next layer's predicted experts ahead (--route-ahead /
// --no-route-ahead). Each can be forced or left to "auto". Both win where the disk is the limit
// and lose where reads and compute fight for the same cores (on the 2-core VM the hypervisor's
// copy of every read costs guest CPU) or where wrong guesses cost more than right ones hide; which
// holds depends on the disk, the cache and what else the phone runs (docs/benchmarks.md). So auto
// does not guess: it times one-token decodes in every allowed combination, interleaved (serial,
// overlap, serial + ahead, overlap + ahead, serial, ...), and keeps the one with the lowest median.
// The machine's speed moves between tokens, so a fixed handful of samples cannot separate two
// combinations a few percent apart: the probe drops a combination as soon as it is clearly slower
// (saving the tokens it would cost), goes on sampling while the fastest two stay within a few
// percent (up to `max_per_arm`), and between near-equals keeps the simpler. It asks again every
// `reprobe_every` tokens, because the cache warms and the machine changes.
// Pure: unit-tested (test/cpp/test_decode_choice.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bmoe {

enum class mode_setting { off, on, automatic };

struct decode_mode {
    bool overlap = false;
    bool ahead   = false;
    bool operator==(const decode_mode & o) const { return overlap == o.overlap && ahead == o.ahead; }
};

struct decode_choice {
    // `probe_per_arm`: samples each combination gets before the probe may end; `max_per_arm`: the
    // most it gets while the leaders stay close.
    decode_choice(mode_setting overlap, mode_setting ahead, int32_t probe_per_arm = 4, int32_t reprobe_every = 128, int32_t max_per_arm = 12);

    // An arm whose median is this much above the best's after three rounds (a median of three
    // outlasts one outlier) leaves the probe, if the gap is also beyond the noise (below).
    static constexpr double drop_ratio = 1.25;
    // The probe ends (after probe_per_arm rounds) when every other arm is this much slower and
    // the gap is more than twice the medians' combined standard error (the machine's noise)...
    static constexpr double clear_ratio = 1.05;
    // ...and an arm this close to the fastest counts as a tie, which the simpler arm wins.
    static constexpr double tie_ratio = 1.02;

    // The mode of the next decode (call once per decode, before it).
    decode_mode next();
    // How that decode went: only `one_token` decodes are timed (a prompt's ubatch is not
    // comparable with a generated token's); `wall_ms` its wall time.
    void record(decode_mode m, bool one_token, double wall_ms);

    // The combination in force (the last probe's winner, or the forced one; the first arm before a
    // probe ended).
    decode_mode chosen() const { return choice; }
    bool        probing() const { return probing_now; }

    // The combinations auto compares (one when both are forced), simplest first: a tie keeps the
    // earlier one, so overlap and route-ahead are used only when measured faster.
    struct arm {
        decode_mode         mode;
        std::vector<double> samples;
        double              median_ms = 0;  // of the last probe (0 before one)
        double              error_ms  = 0;  // the median's standard error (from its spread)
        int32_t             timed     = 0;  // decodes behind median_ms
        bool                live      = true; // still sampled in this probe
    };
    const std::vector<arm> & arms() const { return arm_list; }

  private:
    std::vector<arm> arm_list;
    void finish_round();
    void finish_probe();

    int32_t          probe_per_arm;
    int32_t          reprobe_every;
    int32_t          max_per_arm;
    bool             probing_now = false;
    decode_mode      choice;
    size_t           turn        = 0;  // the arm the next probe decode belongs to (a live one)
    int32_t          since_probe = 0;  // timed decodes since the last probe ended
};

}  // namespace bmoe
