#include "streamer.h"

#include "../cache/cache_budget.h"
#include "../sys/meminfo.h"
#include "../sys/proc_stats.h"

#include "ggml-cpu.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace {

constexpr int MAX_STREAMERS = 8;
std::atomic<streamer *> g_streamers[MAX_STREAMERS];

#ifdef BMOE_HAVE_MMID_HOOK
const void * mmid_hook(const ggml_tensor * weights, int32_t expert, int ith, void *) {
    for (auto & slot : g_streamers) {
        streamer * s = slot.load(std::memory_order_acquire);
        if (s && s->owns(weights->data)) {
            return s->on_expert(weights, expert, ith);
        }
    }
    return nullptr;
}
#endif

int64_t mtime_ns(const struct stat & st) {
    return (int64_t) st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}


}  // namespace

bool streamer_overlap_supported() {
#ifdef BMOE_HAVE_MMID_HOOK
    return true;
#else
    return false;
#endif
}

void streamer_register(streamer * s) {
#ifdef BMOE_HAVE_MMID_HOOK
    ggml_cpu_set_mul_mat_id_hook(mmid_hook, nullptr);
#endif
    for (auto & slot : g_streamers) {
        streamer * expected = nullptr;
        if (slot.compare_exchange_strong(expected, s)) return;
    }
    throw std::runtime_error("too many streamed models in one process (at most 8)");
}

void streamer_unregister(streamer * s) {
    for (auto & slot : g_streamers) {
        streamer * expected = s;
        slot.compare_exchange_strong(expected, nullptr);
    }
}

streamer::streamer(const stream_config & c, const expert_layout & L, uint8_t * mapping_base, int32_t n_expert_used)
    : cfg(c), layout(L), top_k(n_expert_used) {
    if (cfg.overlap && !streamer_overlap_supported()) {
        throw std::runtime_error("--overlap needs the per-expert wait point in ggml-cpu (patch 0002), which this build lacks");
    }
    if (top_k <= 0 || top_k > layout.n_expert) {
        throw std::runtime_error("experts used per token must be between 1 and " + std::to_string(layout.n_expert) + ", got " + std::to_string(top_k));
    }

    // Tensors per layer, in file order (the order the projections are stored and computed).
    layer_tensors.resize((size_t) layout.n_layer);
    for (const auto & t : layout.tensors) layer_tensors[(size_t) t.layer].push_back(&t);
    for (const auto & lt : layer_tensors) n_proj = std::max<int32_t>(n_proj, (int32_t) lt.size());

    model_fd = open(layout.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (model_fd < 0) throw std::runtime_error(layout.path + ": " + std::strerror(errno));
    struct stat st{};
    fstat(model_fd, &st);
    model_mtime_ns = mtime_ns(st);

    // Redirect when mul_mat_id can be told where an expert is (BMOE_STREAM_CANONICAL=1 forces the
    // in-place mapping, which works without patch 0002).
    const char * canon = std::getenv("BMOE_STREAM_CANONICAL");
    redirect = streamer_overlap_supported() && !(canon && *canon && *canon != '0');
    if (redirect) {
        mem.base = mapping_base;
        mem.page = (uint64_t) sysconf(_SC_PAGESIZE);
    } else {
        mem.setup(mapping_base, layout, model_fd);
    }
    if (cfg.dense_weights == dense_weights_mode::anon) {
        mem.make_dense_anonymous(layout, layout.data_offset, model_fd);
    }
    region_lo = mapping_base + layout.tensors.front().file_offset;
    region_hi = mapping_base + layout.tensors.back().file_offset + layout.tensors.back().bytes;
    for (size_t l = 0; l < layer_tensors.size(); l++) {
        for (size_t j = 0; j < layer_tensors[l].size(); j++) {
            tensor_index.push_back({ mapping_base + layer_tensors[l][j]->file_offset, { (int32_t) l, (int32_t) j } });
        }
    }
    std::sort(tensor_index.begin(), tensor_index.end());

    if (redirect) {
        // A slot holds every projection of one expert, each read page-rounded from its file offset.
        std::vector<uint64_t> sub;
        for (const auto & lt : layer_tensors) {
            for (size_t j = 0; j < lt.size(); j++) {
                if (j >= sub.size()) sub.resize(j + 1, 0);
                for (int32_t e = 0; e < layout.n_expert; e++) {
                    const slice_span sp = mem.span(*lt[j], e);
                    sub[j] = std::max<uint64_t>(sub[j], (uint64_t) (sp.read_hi - sp.read_lo));
                }
            }
        }
        pool.init(sub, layout.n_layer * layout.n_expert);
    }

    // Budget: MiB or auto, in slots, with the guard against caches that can never hit.
    cache_budget_request want;
    want.is_auto   = cfg.cache_auto;
    want.mib       = cfg.cache_mb;
    want.ceil_mib  = cfg.cache_ceil_mb;
    want.floor_mib = cfg.cache_floor_mb;
    want.force     = cfg.force_cache;
    cache_shape shape;
    shape.slot_bytes        = redirect ? pool.slot_bytes : mem.slot_bytes;
    shape.working_set_slots = (int64_t) layout.n_moe_layers() * top_k;
    shape.max_slots         = (int64_t) layout.n_layer * layout.n_expert;
    shape.expert_bytes      = layout.expert_bytes;
    const cache_budget budget = plan_cache_budget(want, shape, cfg.cache_auto ? mem_available_bytes() : 0);
    if (!budget.error.empty()) throw std::runtime_error(budget.error);
    warning           = budget.warning;
    budget_bytes      = budget.bytes;
    configured_slots  = budget.slots;
    working_set_bytes = (uint64_t) shape.working_set_slots * shape.slot_bytes;

    unit_slot.assign((size_t) layout.n_layer * layout.n_expert, -1);
    popularity.assign((size_t) layout.n_layer * layout.n_expert, 0);
    prefetched.assign((size_t) layout.n_layer * layout.n_expert, 0);
    unit_gen = std::vector<std::atomic<uint32_t>>((size_t) layout.n_layer * layout.n_expert);
    slices = std::vector<slice_state>((size_t) layout.n_layer * layout.n_expert * n_proj);
    set_pool_slots(std::max(configured_slots, top_k));

    lanes = std::make_unique<read_lanes>(layout.path, cfg.io_threads, cfg.odirect);
    if (!lanes->warning.empty()) warning = lanes->warning;
    streamer_register(this);
}

streamer::~streamer() {
    streamer_unregister(this);
    lanes.reset(); // joins the lanes before the memory they write goes away
    if (model_fd >= 0) close(model_fd);
}

stream_info streamer::info() const {
    stream_info i;
    i.budget_bytes      = budget_bytes;
    i.configured_slots  = configured_slots;
    i.working_set_bytes = working_set_bytes;
    i.expert_bytes      = layout.expert_bytes;
    i.dense_bytes       = layout.dense_bytes;
    i.top_k             = top_k;
    i.io_threads        = cfg.io_threads;
    i.overlap           = cfg.overlap;
    i.warning           = warning;
    i.total_hits        = total_hits;
    i.total_misses      = total_misses;
    return i;
}

bool streamer::eval_callback(ggml_tensor * t, bool ask, void * user_data) {
    return static_cast<streamer *>(user_data)->on_eval(t, ask);
}

std::string streamer::error() const {
    std::lock_guard<std::mutex> lock(err_mu);
    return err;
}

void streamer::fail(const std::string & msg) {
    {
        std::lock_guard<std::mutex> lock(err_mu);
        if (err.empty()) err = msg;
    }
    if (abort_flag) abort_flag->store(true); // the graph stops at the next node; no token comes out
}

uint64_t streamer::resident_bytes() const {
    uint64_t sum = 0;
    for (const auto & k : slot_owner) {
        if (k.layer >= 0) sum += layout.unit_bytes(k.layer);
    }
    return sum;
}

void streamer::set_pool_slots(int32_t n) {
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

void streamer::begin_decode(std::atomic<bool> * abort) {
    abort_flag = abort;
    hits = misses = pf_issued = pf_useful = 0;
    io_wait_ms = stall_ms = mgmt_ms = 0;
    bytes0 = lanes->bytes_read.load();
    busy0  = lanes->busy_ns.load();
    current_layer = -1;
    {
        std::lock_guard<std::mutex> lock(err_mu);
        err.clear();
    }
    // A file changed under us would feed garbage into the experts: refuse instead.
    struct stat st{};
    if (fstat(model_fd, &st) != 0 || (uint64_t) st.st_size != layout.file_size || mtime_ns(st) != model_mtime_ns) {
        fail(layout.path + ": the model file changed on disk while streaming (size or modification time differs from load)");
    }
    struct stat st_path{};
    if (stat(layout.path.c_str(), &st_path) != 0 || st_path.st_ino != st.st_ino) {
        fail(layout.path + ": the model file was replaced or removed while streaming");
    }
}

void streamer::end_decode(token_metrics & m) {
    // A prompt may have grown the pool to hold a whole layer's union: give that memory back.
    const double t0 = now_ms();
    const int32_t target = std::max(configured_slots, top_k);
    if ((int32_t) slot_owner.size() > target) {
        set_pool_slots(target);
    }
    mgmt_ms += now_ms() - t0;
    total_hits += hits;
    total_misses += misses;
    m.prefetch_issued      = pf_issued;
    m.prefetch_useful      = pf_useful;
    m.read_bytes           = lanes->bytes_read.load() - bytes0;
    m.expert_hits          = hits;
    m.expert_misses        = misses;
    m.mgmt_ms              = mgmt_ms;
    m.cache_resident_bytes = resident_bytes();
    if (cfg.overlap) {
        m.io_ms    = (double) (lanes->busy_ns.load() - busy0) / 1e6;
        m.stall_ms = stall_ms;
        m.compute_ms = std::max(0.0, m.wall_ms - stall_ms - mgmt_ms);
    } else {
        m.io_ms      = io_wait_ms;
        m.compute_ms = std::max(0.0, m.wall_ms - io_wait_ms - mgmt_ms);
    }
    abort_flag = nullptr;
}

bool streamer::on_eval(ggml_tensor * t, bool ask) {
    static constexpr char ROUTING[] = "ffn_moe_topk-";
    const bool routing = std::strncmp(t->name, ROUTING, sizeof(ROUTING) - 1) == 0;
    if (ask) {
        if (t->op == GGML_OP_MUL_MAT_ID && t->src[0] && owns(t->src[0]->data)) {
            // An expert matmul: its weights must be ours, at the address we rebound, and this
            // layer's routing must have been observed just before it.
            const void * data = t->src[0]->data;
            auto it = std::lower_bound(tensor_index.begin(), tensor_index.end(), std::make_pair(data, std::make_pair(INT32_MIN, INT32_MIN)));
            if (it == tensor_index.end() || it->first != data) {
                fail(std::string("expert tensor ") + t->src[0]->name + " is not at the address it was mapped to; refusing to stream");
            } else if (it->second.first != current_layer) {
                fail(std::string("no routing observed before ") + t->name + " (layer " + std::to_string(it->second.first) + ")");
            }
        }
        return routing;
    }
    if (routing) {
        const int32_t layer = std::atoi(t->name + sizeof(ROUTING) - 1);
        if (layer < 0 || layer >= layout.n_layer || layer_tensors[(size_t) layer].empty()) {
            fail(std::string("routing node ") + t->name + " names a layer without streamed experts");
            return true;
        }
        route_layer(layer, t);
    }
    return true;
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
    std::vector<int32_t> experts;
    for (int32_t e = 0; e < layout.n_expert; e++) if (need[(size_t) e]) experts.push_back(e);

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
    // Issue in the order the kernel consumes them: projection by projection, ascending expert.
    std::vector<read_task> tasks;
    for (auto & v : by_proj) tasks.insert(tasks.end(), v.begin(), v.end());
    tasks.insert(tasks.end(), pending_unmaps.begin(), pending_unmaps.end());
    pending_unmaps.clear();
    lanes->submit_all(tasks);
    if (cfg.prefetch > 0) {
        prefetch_after(layer);
    }
    if (cfg.overlap) {
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
        if (st.status.load() == SLICE_READING) lanes->wait(st);
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
            t.dst      = pool.addr(s, j);
            t.file_off = sp.read_off;
            t.len      = (uint64_t) (sp.read_hi - sp.read_lo);
            by_proj[j].push_back(t);
            continue;
        }
        t.state    = &st;
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
    int32_t next = layer + 1;
    while (next < layout.n_layer && layer_tensors[(size_t) next].empty()) next++;
    if (next >= layout.n_layer) return;
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
    std::vector<read_task> tasks;
    for (auto & v : by_proj) tasks.insert(tasks.end(), v.begin(), v.end());
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
