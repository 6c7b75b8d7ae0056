// The streamer's residency work: a layer's routing becomes reads (issued in the order mul_mat_id
// consumes them), the cache's admissions and evictions become slot moves, and the mul_mat_id
// hook waits for an expert that is still arriving. The setup and the decode lifecycle are in
// streamer.cpp.
#include "bmoe/stream/streamer.h"

#include "bmoe/sys/proc_stats.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>

namespace bmoe {

uint64_t streamer::resident_bytes() const {
    uint64_t sum = 0;
    for (const auto & k : slot_owner) {
        if (k.layer >= 0) sum += layout.unit_bytes(k.layer);
    }
    return sum;
}

void streamer::set_pool_slots(int32_t n) {
    // Never more slots than units: the pool reserves address space for that many (slot_pool).
    n = std::min<int32_t>(n, layout.n_layer * layout.n_expert);
    const int32_t old = (int32_t) slot_owner.size();
    if (n < old) {
        // Shrinking: drop the units that live in the slots going away.
        for (int32_t s = n; s < old; s++) {
            const expert_key k = slot_owner[(size_t) s];
            if (k.layer < 0) continue;
            policy.erase(k);
            evict_unit(k, false);
        }
        free_slots.erase(std::remove_if(free_slots.begin(), free_slots.end(), [n](int32_t s) { return s >= n; }), free_slots.end());
    }
    if (redirect) {
        pool.resize(n);
    } else {
        mem.resize_pool(n);
    }
    slot_owner.resize((size_t) n, expert_key{ -1, -1 });
    for (int32_t s = old; s < n; s++) free_slots.push_back(s);
    policy.capacity = n;
}

int32_t streamer::take_slot() {
    if (free_slots.empty()) return -1;
    const int32_t s = free_slots.back();
    free_slots.pop_back();
    return s;
}

void streamer::route_layer(int32_t layer, const ggml_tensor * ids) {
    current_layer = layer;
    if (ids->type != GGML_TYPE_I32) {
        fail(std::string("routing node ") + ids->name + " is not int32");
        return;
    }
    // ids: [n_used, n_tokens], rows strided by nb[1]. The union over the ubatch's tokens.
    std::vector<uint8_t> need((size_t) layout.n_expert, 0);
    const int64_t n_used = ids->ne[0], n_tok = ids->ne[1];
    for (int64_t i = 0; i < n_tok; i++) {
        const int32_t * row = (const int32_t *) ((const char *) ids->data + i * ids->nb[1]);
        for (int64_t k = 0; k < n_used; k++) {
            const int32_t e = row[k * (ids->nb[0] / 4)];
            if (e < 0 || e >= layout.n_expert) {
                fail("routing of layer " + std::to_string(layer) + " chose expert " + std::to_string(e) + " of " + std::to_string(layout.n_expert));
                return;
            }
            need[(size_t) e] = 1;
        }
    }
    decode_tokens = std::max(decode_tokens, (int32_t) n_tok);
    std::vector<int32_t> experts;
    for (int32_t e = 0; e < layout.n_expert; e++) if (need[(size_t) e]) experts.push_back(e);
    score_ahead(layer, need); // a prediction made for this layer (route-ahead in force last layer)

    const double t0 = now_ms();
    if ((int32_t) experts.size() > (int32_t) slot_owner.size()) {
        set_pool_slots((int32_t) experts.size()); // a prompt ubatch can route a whole layer
    }
    const auto & lt = layer_tensors[(size_t) layer];
    std::vector<std::vector<read_task>> by_proj(lt.size());
    for (int32_t e : experts) {
        const size_t u = (size_t) layer * layout.n_expert + e;
        popularity[u]++;
        if (prefetched[u]) {
            prefetched[u] = 0;
            if (unit_slot[u] >= 0) pf_useful++;
        }
        if (!load_unit({ layer, e }, by_proj, false)) return;
    }
    mgmt_ms += now_ms() - t0;
    submit_reads(by_proj);
    if (cfg.prefetch > 0) {
        prefetch_after(layer);
    }
    if (ahead_now && n_tok == 1) {
        route_ahead_after(layer, ids);
    }
    if (overlap_now) {
        return; // mul_mat_id waits per expert
    }
    // Serial: every routed slice, including hits still arriving from a prefetch.
    const double w0 = now_ms();
    for (int32_t e : experts) {
        for (size_t j = 0; j < lt.size(); j++) {
            if (!lanes->wait(slices[((size_t) layer * layout.n_expert + e) * n_proj + j])) {
                fail(lanes->error());
                io_wait_ms += now_ms() - w0;
                return;
            }
        }
    }
    io_wait_ms += now_ms() - w0;
}

void streamer::evict_unit(const expert_key & v, bool deferred) {
    const size_t u = (size_t) v.layer * layout.n_expert + v.expert;
    // An in-flight read (a prefetch) still writes into the slot: let it land first.
    for (int32_t j = 0; j < n_proj; j++) {
        slice_state & st = slices[u * n_proj + j];
        if (st.status.load() == SLICE_READING) {
            const double w0 = now_ms();
            lanes->wait(st);
            evict_wait_ms += now_ms() - w0;
        }
        st.status.store(SLICE_ABSENT);
    }
    const int32_t s = unit_slot[u];
    if (redirect) {
        // Nothing is mapped per unit: the slot is simply reused.
    } else if (deferred) {
        // The slot moves on at once (its next mapping replaces nothing of ours); the old address
        // keeps an alias until a lane releases it, unless the unit is mapped again first.
        const auto & lt = layer_tensors[(size_t) v.layer];
        for (size_t j = 0; j < lt.size(); j++) {
            const slice_span sp = mem.span(*lt[j], v.expert);
            if (sp.own_hi == sp.own_lo) continue;
            read_task t;
            t.unmap_addr   = sp.own_lo;
            t.unmap_len    = (uint64_t) (sp.own_hi - sp.own_lo);
            t.unmap_gen    = &unit_gen[u];
            t.unmap_expect = unit_gen[u].load();
            pending_unmaps.push_back(t);
        }
    } else {
        std::lock_guard<std::mutex> lock(lanes->vm_mu);
        unit_gen[u]++;
        mem.unmap_unit(layer_tensors[(size_t) v.layer], v.expert);
    }
    unit_slot[u]  = -1;
    prefetched[u] = 0;
    if (s >= 0) {
        slot_owner[(size_t) s] = expert_key{ -1, -1 };
        free_slots.push_back(s);
    }
}

bool streamer::load_unit(const expert_key & key, std::vector<std::vector<read_task>> & by_proj, bool prefetch) {
    admit_result r = policy.admit(key);
    if (r.hit) {
        if (!prefetch) hits++;
        return true;
    }
    if (!prefetch) misses++;
    for (const expert_key & v : r.evicted) evict_unit(v, true);
    const int32_t s = take_slot();
    if (!r.admitted || s < 0) {
        fail("expert cache accounting error at layer " + std::to_string(key.layer));
        return false;
    }
    const auto & lt = layer_tensors[(size_t) key.layer];
    slot_owner[(size_t) s] = key;
    const size_t u = (size_t) key.layer * layout.n_expert + key.expert;
    unit_slot[u] = s;
    if (!redirect) {
        // Any release of this unit's old alias still queued must now leave it alone.
        std::lock_guard<std::mutex> lock(lanes->vm_mu);
        unit_gen[u]++;
    }
    for (size_t j = 0; j < lt.size(); j++) {
        const slice_span sp = mem.span(*lt[j], key.expert);
        slice_state & st = slices[u * n_proj + j];
        st.status.store(SLICE_READING);
        read_task t;
        if (redirect) {
            // Same page-rounded read, into the slot (destination and file offset stay page aligned).
            t.state    = &st;
            t.file     = lt[j]->shard;
            t.dst      = pool.addr(s, j);
            t.file_off = sp.read_off;
            t.len      = (uint64_t) (sp.read_hi - sp.read_lo);
            if (lt[j]->repacked) {
                // Converted by the lane into llama.cpp's repacked layout, where the expert's bytes sit.
                t.convert_off = (uint64_t) (sp.addr - sp.read_lo);
                t.convert_len = lt[j]->slice_bytes;
                t.convert_arg = lt[j];
            }
            by_proj[j].push_back(t);
            continue;
        }
        t.state    = &st;
        t.file     = lt[j]->shard;
        t.dst      = sp.read_lo;
        t.file_off = sp.read_off;
        t.len      = (uint64_t) (sp.read_hi - sp.read_lo);
        // The lane maps the slot under the slice's interior, then reads into it.
        t.map_addr = sp.own_lo;
        t.map_len  = (uint64_t) (sp.own_hi - sp.own_lo);
        t.map_off  = mem.slot_offset(s, j);
        t.map_fd   = mem.memfd;
        by_proj[j].push_back(t);
    }
    return true;
}

// Prefetch predictor: the run's most popular experts of the next MoE layer that are not resident.
// (The previous token's routing predicts poorly; popularity does as well or better. Off by default
// until the bench shows it wins.) Needs room beyond this layer's experts, so not with cache 0.
void streamer::prefetch_after(int32_t layer) {
    if (configured_slots < top_k + cfg.prefetch) return;
    const int32_t next = next_moe_layer(layer);
    if (next < 0) return;
    std::vector<int32_t> cand;
    for (int32_t e = 0; e < layout.n_expert; e++) {
        const size_t u = (size_t) next * layout.n_expert + e;
        if (unit_slot[u] < 0 && popularity[u] > 0) cand.push_back(e);
    }
    std::sort(cand.begin(), cand.end(), [&](int32_t a, int32_t b) {
        return popularity[(size_t) next * layout.n_expert + a] > popularity[(size_t) next * layout.n_expert + b];
    });
    if ((int32_t) cand.size() > cfg.prefetch) cand.resize((size_t) cfg.prefetch);
    if (cand.empty()) return;
    const double t0 = now_ms();
    std::vector<std::vector<read_task>> by_proj(layer_tensors[(size_t) next].size());
    for (int32_t e : cand) {
        // Admitted after this layer's experts: the victims are older entries, never this layer's.
        if (!load_unit({ next, e }, by_proj, true)) return;
        prefetched[(size_t) next * layout.n_expert + e] = 1;
        pf_issued++;
    }
    mgmt_ms += now_ms() - t0;
    submit_reads(by_proj);
}

int32_t streamer::next_moe_layer(int32_t layer) const {
    for (int32_t next = layer + 1; next < layout.n_layer; next++) {
        if (!layer_tensors[(size_t) next].empty()) return next;
    }
    return -1;
}

// Slots the pool never shrinks below: the budget, at least one token's experts of a layer, and
// with route-ahead room for the next layer's predicted experts beside this layer's.
int32_t streamer::min_slots() const {
    return std::min<int32_t>(std::max(configured_slots, top_k) + (cfg.route_ahead != mode_setting::off ? top_k : 0), layout.n_layer * layout.n_expert);
}

// Route-ahead: layer `next`'s router applied to this layer's hidden state names the experts it
// would pick; the ones not resident are read now, behind this layer's own reads, so they arrive
// while this layer computes. Lossless: layer `next`'s real routing still decides what is computed
// (a wrong guess costs a read). The router of `next` is known once its routing has been seen.
void streamer::route_ahead_after(int32_t layer, const ggml_tensor * topk) {
    layer_router r;
    const ggml_tensor * hidden = nullptr;
    if (!router_of(topk, &r, &hidden)) return;
    routers[(size_t) layer] = r;
    const int32_t next = next_moe_layer(layer);
    if (next < 0 || !routers[(size_t) next].weight) return;
    const double t0 = now_ms();
    ahead_pred = router_predict(routers[(size_t) next], hidden, top_k, ahead_scratch);
    ahead_layer = next;
    ahead_read_ids.clear();
    std::vector<std::vector<read_task>> by_proj(layer_tensors[(size_t) next].size());
    for (int32_t e : ahead_pred) {
        if (e < 0 || e >= layout.n_expert || unit_slot[(size_t) next * layout.n_expert + e] >= 0) continue;
        if (!load_unit({ next, e }, by_proj, true)) return;
        ahead_read_ids.push_back(e);
        ahead_read++;
    }
    mgmt_ms += now_ms() - t0;
    submit_reads(by_proj);
}

bool streamer::cancel_unit(const expert_key & v) {
    const size_t u = (size_t) v.layer * layout.n_expert + v.expert;
    if (unit_slot[u] < 0) return true;
    const size_t dropped = lanes->cancel(&slices[u * n_proj], (size_t) n_proj);
    for (int32_t j = 0; j < n_proj; j++) {
        if (slices[u * n_proj + j].status.load() != SLICE_ABSENT) {
            // Part of it is read or being read: keep it cached (its other reads, if dropped, are redone).
            if (dropped > 0) {
                policy.erase(v);
                evict_unit(v, true);
            }
            return false;
        }
    }
    policy.erase(v);
    evict_unit(v, true);
    return true;
}

// How the pending prediction for `layer` compares with its real routing (`routed`: per expert).
// Wrong guesses whose reads have not started are cancelled: they would only delay this layer's
// own misses, queued behind them.
void streamer::score_ahead(int32_t layer, const std::vector<uint8_t> & routed) {
    if (ahead_layer != layer) return;
    for (uint8_t r : routed) ahead_routed += r;
    for (int32_t e : ahead_pred) ahead_correct += routed[(size_t) e];
    for (int32_t e : ahead_read_ids) {
        if (routed[(size_t) e]) continue;
        if (!cancel_unit({ layer, e })) ahead_wasted += layout.unit_bytes(layer);
    }
    ahead_layer = -1;
    ahead_pred.clear();
    ahead_read_ids.clear();
}

// Issues the reads in the order the kernel consumes them (projection by projection, ascending
// expert), then the releases of evicted units, which must not delay a read.
void streamer::submit_reads(const std::vector<std::vector<read_task>> & by_proj) {
    std::vector<read_task> tasks;
    for (const auto & v : by_proj) tasks.insert(tasks.end(), v.begin(), v.end());
    tasks.insert(tasks.end(), pending_unmaps.begin(), pending_unmaps.end());
    pending_unmaps.clear();
    lanes->submit_all(tasks);
}

const void * streamer::on_expert(const ggml_tensor * weights, int32_t expert, int ith) {
    auto it = std::lower_bound(tensor_index.begin(), tensor_index.end(), std::make_pair((const void *) weights->data, std::make_pair(INT32_MIN, INT32_MIN)));
    if (it == tensor_index.end() || it->first != weights->data || expert < 0 || expert >= layout.n_expert) return nullptr;
    const int32_t layer = it->second.first, j = it->second.second;
    const size_t  u     = (size_t) layer * layout.n_expert + expert;
    const slice_state & st = slices[u * n_proj + j];
    const uint8_t s = st.status.load(std::memory_order_acquire);
    if (s != SLICE_READY) {
        const double t0 = ith == 0 ? now_ms() : 0;
        if (s == SLICE_ABSENT || !lanes->wait(st)) {
            fail(s == SLICE_ABSENT ? "expert " + std::to_string(expert) + " of layer " + std::to_string(layer) + " was computed without being routed"
                                   : lanes->error());
        }
        if (ith == 0) stall_ms += now_ms() - t0;
    }
    if (!redirect) return nullptr;
    const int32_t slot = unit_slot[u];
    if (slot < 0) return nullptr; // failed above: the graph is being aborted
    const slice_span sp = mem.span(*layer_tensors[(size_t) layer][(size_t) j], expert);
    return pool.addr(slot, (size_t) j) + (sp.addr - sp.read_lo);
}

}  // namespace bmoe
