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
// `reprobe_every` tokens, because the cache warms and the machine changes, and at once when the
// chosen combination's own decodes drift well above what the probe measured for it (the disk's
// speed on this VM moves by 2x between minutes; a probe that chose in a fast spell would otherwise
// keep its choice through a slow one for up to `reprobe_every` tokens).
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
    // In force, the median of the chosen combination's last decodes is compared with its probe
    // median: this much above it, and beyond the noise of the two, starts a probe now. The window
    // is `drift_window` decodes and at least `drift_window_ms` of them at the probe's speed (a
    // stall of this VM lasts tens of ms: eight 3 ms decodes of a tiny model are inside one). Only a
    // slowdown (decodes that get faster, the cache warming, keep the choice), and once between two
    // periodic probes: a machine that stays slow, or a probe biased against the way it keeps,
    // costs one extra probe per `reprobe_every` tokens, not one per window.
    static constexpr double drift_ratio     = 1.25;
    static constexpr size_t drift_window    = 8;
    static constexpr double drift_window_ms = 500;

    // The mode of the next decode (call once per decode, before it).
    decode_mode next();
    // How that decode went: only `one_token` decodes are timed (a prompt's ubatch is not
    // comparable with a generated token's); `wall_ms` its wall time.
    void record(decode_mode m, bool one_token, double wall_ms);

    // The combination in force (the last probe's winner, or the forced one; the first arm before a
    // probe ended).
    decode_mode chosen() const { return choice; }
    bool        probing() const { return probing_now; }
    // Probes started since construction (the first included), and those a drift started early.
    int32_t probes() const { return probes_started; }
    int32_t drift_probes() const { return drift_started; }

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
    void start_probe();
    bool drifted(double wall_ms);

    int32_t          probe_per_arm;
    int32_t          reprobe_every;
    int32_t          max_per_arm;
    bool             probing_now = false;
    decode_mode      choice;
    size_t           turn        = 0;  // the arm the next probe decode belongs to (a live one)
    int32_t          since_probe = 0;  // timed decodes since the last probe ended
    int32_t          probes_started = 0;
    int32_t          drift_started  = 0;
    // The chosen arm's median and its error at the probe that chose it, and its decodes since.
    double              ref_ms  = 0;
    double              ref_err = 0;
    std::vector<double> recent;
    bool                drift_spent = false;  // a drift started a probe since the last periodic one
};

}  // namespace bmoe
