#pragma once
// The expert streamer: owns the expert memory, the read lanes and the cache for one loaded model,
// observes routing through llama.cpp's eval callback, and makes each routed expert resident before
// the layer's expert matmuls read it. Serial mode waits at the routing node; overlap mode returns
// at once and waits per expert inside ggml-cpu's mul_mat_id (our patch 0002).
#include "bmoe/cache/cache_policy.h"
#include "bmoe/contract/stream_info.h"
#include "bmoe/io/read_lanes.h"
#include "bmoe/stream/decode_observer.h"
#include "bmoe/stream/decode_choice.h"
#include "bmoe/stream/route_ahead.h"
#include "bmoe/vm/expert_memory.h"
#include "bmoe/vm/slot_pool.h"
#include "bmoe/layout/expert_layout.h"
#include "bmoe/stream/stream_config.h"

#include "ggml.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bmoe {

// What the streamer resolved at load, and its totals so far (NativeStreamInfo): the members are
// the contract's list (include/bmoe/contract/stream_info.h, documented in contract/stream-info.mjs).
#define BMOE_STREAM_INFO_MEMBER(type, member, key) type member{};
struct stream_info {
    struct probe_arm {
        BMOE_PROBE_ARM_FIELDS(BMOE_STREAM_INFO_MEMBER)
    };
    BMOE_STREAM_INFO_FIELDS(BMOE_STREAM_INFO_MEMBER)
};
#undef BMOE_STREAM_INFO_MEMBER

struct streamer : decode_observer {
    // Opens lanes, rebinds the expert tensors of the mappings (`mapping_bases`: per shard of
    // `layout`, the address of its file offset 0; nullptr for a shard without a mapping) onto
    // engine memory and sizes the cache. `n_expert_used` is the top-k in force (after any
    // override). `cfg` was validated by the caller (model_state_load). Throws std::runtime_error.
    streamer(const stream_config & cfg, const expert_layout & layout, const std::vector<uint8_t *> & mapping_bases, int32_t n_expert_used);
    ~streamer() override;

    // llama.cpp cb_eval (one per context; the engine owns it).
    static bool eval_callback(ggml_tensor * t, bool ask, void * user_data);

    void        begin_decode(std::atomic<bool> * abort) override;
    void        end_decode(token_metrics & m) override;
    std::string error() const override;

    // Called from the mul_mat_id hook (any compute thread): waits for the expert when it is still
    // being read, and returns where it is (redirect mode) or nullptr (canonical addresses).
    const void * on_expert(const ggml_tensor * weights, int32_t expert, int ith);
    bool owns(const void * data) const {
        for (const auto & r : regions) {
            if ((const uint8_t *) data >= r.first && (const uint8_t *) data < r.second) return true;
        }
        return false;
    }

    stream_info info() const;

  private:
    // Setup (streamer.cpp).
    void open_files(const std::vector<uint8_t *> & mapping_bases);
    void index_tensors();
    void setup_memory();
    void size_cache();
    bool on_eval(ggml_tensor * t, bool ask);
    // --repack: learns where llama.cpp put a repacked expert tensor (its CPU_REPACK buffer), the
    // first time a mul_mat_id reads it. False (and fail()) when it is not one of ours.
    bool learn_repacked(const ggml_tensor * w);
    // Residency (residency.cpp).
    void route_layer(int32_t layer, const ggml_tensor * ids);
    // Makes `key` resident in a slot (evicting as the policy says) and appends its reads.
    bool load_unit(const expert_key & key, std::vector<std::vector<read_task>> & by_proj, bool prefetch);
    // Evicts `v`; its pages are released now (`deferred` false) or by a lane after this layer's reads.
    void evict_unit(const expert_key & v, bool deferred);
    // Drops a read-ahead unit whose reads have not started (route-ahead guessed wrong): its
    // queued reads are cancelled and it leaves the cache. Returns false when a read had started.
    bool cancel_unit(const expert_key & v);
    void prefetch_after(int32_t layer);
    // Route-ahead (route_ahead.cpp): after layer `layer`'s reads, predict the next MoE layer's
    // experts from this layer's hidden state and read them; score_ahead counts how it went.
    void route_ahead_after(int32_t layer, const ggml_tensor * topk);
    void score_ahead(int32_t layer, const std::vector<uint8_t> & routed);
    int32_t next_moe_layer(int32_t layer) const;
    int32_t min_slots() const;
    void submit_reads(const std::vector<std::vector<read_task>> & by_proj);
    void fail(const std::string & msg);
    void set_pool_slots(int32_t n);
    int32_t take_slot();
    uint64_t resident_bytes() const;

    stream_config   cfg;
    expert_layout   layout;
    int32_t         top_k             = 0;
    uint64_t        budget_bytes      = 0;
    int32_t         configured_slots  = 0;
    uint64_t        working_set_bytes = 0;
    std::string     warning;
    // Redirect mode (patch 0002 present): experts live in fixed slots and mul_mat_id is told where;
    // otherwise they are mapped in place at their canonical addresses (expert_memory).
    bool            redirect = false;
    // This decode's mode (--overlap, --no-overlap, or what auto measured), set in begin_decode.
    decode_choice   modes{ mode_setting::off, mode_setting::off };
    bool            overlap_now = false;
    bool            ahead_now   = false;
    int32_t         decode_tokens = 0;   // the widest routing of this decode (1: a generated token)
    uint64_t        total_hits = 0, total_misses = 0;

    expert_memory                                   mem;
    slot_pool                                       pool;            // redirect mode
    std::unique_ptr<read_lanes>                     lanes;
    cache_policy                                    policy{ 0 };
    std::vector<std::vector<const expert_tensor *>> layer_tensors;   // per layer, in projection order
    std::vector<int32_t>                            unit_slot;       // [layer * n_expert + e] → slot or -1
    std::vector<slice_state>                        slices;          // [(layer * n_expert + e) * n_proj + j]
    std::vector<expert_key>                         slot_owner;      // slot → unit
    std::vector<int32_t>                            free_slots;
    int32_t                                         n_proj = 0;
    int32_t                                         current_layer = -1;
    std::vector<std::pair<uint8_t *, uint8_t *>>   regions;         // per shard with experts: [first, end) of its expert tensors
    std::vector<std::pair<const void *, std::pair<int32_t, int32_t>>> tensor_index; // data → (layer, j), sorted
    std::vector<int>                                model_fds;       // per shard (edge pages, --dense-weights anon, the change check)
    std::vector<int64_t>                            model_mtime_ns;  // per shard, at load

    mutable std::mutex  err_mu;
    std::string         err;
    std::atomic<bool> * abort_flag = nullptr;

    std::vector<uint32_t>                           popularity;      // [layer * n_expert + e] → times routed
    std::vector<uint8_t>                            prefetched;      // [layer * n_expert + e] → read ahead, not used yet
    std::vector<std::atomic<uint32_t>>              unit_gen;        // bumped each time a unit is mapped: stale releases skip it
    std::vector<read_task>                          pending_unmaps;  // evictions, released by the lanes after the reads
    std::vector<layer_router>                       routers;         // per layer, recorded when its routing is seen
    std::vector<uint8_t>                            ahead_scratch;
    int32_t                                         ahead_layer = -1; // the layer the pending prediction is for
    std::vector<int32_t>                            ahead_pred;      // its predicted experts
    std::vector<int32_t>                            ahead_read_ids;  // of those, the ones read ahead

    // Per-decode counters.
    uint64_t hits = 0, misses = 0, pf_issued = 0, pf_useful = 0;
    uint64_t ahead_routed = 0, ahead_correct = 0, ahead_read = 0, ahead_wasted = 0;
    double   io_wait_ms = 0, stall_ms = 0, mgmt_ms = 0;
    double   evict_wait_ms = 0;  // admissions waiting for a victim's read to land: I/O, not management
    uint64_t bytes0 = 0, busy0 = 0;
};

// Registers/unregisters a streamer for the process-wide mul_mat_id hook.
void streamer_register(streamer * s);
void streamer_unregister(streamer * s);
// True when this build carries patch 0002 (per-expert wait point): --overlap needs it.
bool streamer_overlap_supported();

}  // namespace bmoe
