#include "bmoe/stream/streamer.h"

#include "bmoe/cache/cache_budget.h"
#include "bmoe/sys/meminfo.h"
#include "bmoe/sys/proc_stats.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace bmoe {

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

#ifdef BMOE_HAVE_REPACK_EXPERT
// read_lanes::convert for --repack: one expert slice, file layout → llama.cpp's repacked layout.
bool repack_slice(const void * arg, uint8_t * data, const uint8_t * copy, uint64_t len) {
    const expert_tensor & t = *static_cast<const expert_tensor *>(arg);
    return len == t.slice_bytes && ggml_cpu_repack_expert((ggml_type) t.type, t.ne[0], t.ne[1], t.ne[2], data, copy);
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

streamer::streamer(const stream_config & c, const expert_layout & L, const std::vector<uint8_t *> & mapping_bases, int32_t n_expert_used)
    : cfg(c), layout(L), top_k(n_expert_used) {
    if (cfg.overlap == mode_setting::on && !streamer_overlap_supported()) {
        throw std::runtime_error("--overlap needs the per-expert wait point in ggml-cpu (patch 0002), which this build lacks");
    }
    // auto without the wait point can only be serial.
    modes = decode_choice(streamer_overlap_supported() ? cfg.overlap : mode_setting::off, cfg.route_ahead);
    if (top_k <= 0 || top_k > layout.n_expert) {
        throw std::runtime_error("experts used per token must be between 1 and " + std::to_string(layout.n_expert) + ", got " + std::to_string(top_k));
    }
    if (cfg.repack) {
        // Repacked experts live in llama.cpp's CPU_REPACK buffer, not the mapping: they can only be
        // streamed into slots that mul_mat_id is pointed at (redirect mode), converted on read.
#ifdef BMOE_HAVE_REPACK_EXPERT
        const char * canon = std::getenv("BMOE_STREAM_CANONICAL");
        if (!streamer_overlap_supported() || (canon && *canon && *canon != '0')) {
            throw std::runtime_error("--repack with --moe-stream needs mul_mat_id's wait point (patch 0002) and slots (BMOE_STREAM_CANONICAL unset)");
        }
        for (auto & t : layout.tensors) {
            t.repacked = ggml_cpu_repack_expert((ggml_type) t.type, t.ne[0], t.ne[1], t.ne[2], nullptr, nullptr);
        }
#else
        throw std::runtime_error("--repack with --moe-stream needs ggml_cpu_repack_expert (patch 0003), which this build lacks");
#endif
    }
    open_files(mapping_bases);
    index_tensors();
    setup_memory();
    size_cache();

    const size_t n_units = (size_t) layout.n_layer * layout.n_expert;
    unit_slot.assign(n_units, -1);
    popularity.assign(n_units, 0);
    prefetched.assign(n_units, 0);
    unit_gen = std::vector<std::atomic<uint32_t>>(n_units);
    slices = std::vector<slice_state>(n_units * n_proj);
    routers.resize((size_t) layout.n_layer);
    set_pool_slots(min_slots());

    std::vector<std::string> paths;
    for (const auto & sh : layout.shards) paths.push_back(sh.path);
    lanes = std::make_unique<read_lanes>(paths, cfg.io_threads, cfg.odirect);
#ifdef BMOE_HAVE_REPACK_EXPERT
    lanes->convert = repack_slice;
#endif
    // After size_cache(): keep its warning (auto fell back to no cache) beside the lanes' one.
    if (!lanes->warning.empty()) warning = warning.empty() ? lanes->warning : warning + "; " + lanes->warning;
    streamer_register(this);
}

// One descriptor per shard for setup and the change check, with the identity seen at load.
void streamer::open_files(const std::vector<uint8_t *> & mapping_bases) {
    for (size_t i = 0; i < layout.shards.size(); i++) {
        const std::string & path = layout.shards[i].path;
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
        model_fds.push_back(fd);
        struct stat st{};
        fstat(fd, &st);
        model_mtime_ns.push_back(mtime_ns(st));
    }
    for (const auto & t : layout.tensors) {
        if (mapping_bases[(size_t) t.shard] == nullptr) {
            throw std::runtime_error(layout.shards[(size_t) t.shard].path + ": not mapped in this process; cannot stream its experts");
        }
    }
    mem.bases = mapping_bases;
    mem.page  = (uint64_t) sysconf(_SC_PAGESIZE);
}

// Tensors per layer in file order (the order the projections are stored and computed), and the
// lookup from a tensor's mapped address to (layer, projection).
void streamer::index_tensors() {
    layer_tensors.resize((size_t) layout.n_layer);
    for (size_t i = 0; i < layout.tensors.size(); i++) {
        const expert_tensor & t = layout.tensors[i];
        if (t.layer < 0 || t.layer >= layout.n_layer) {
            throw std::runtime_error(layout.shards[(size_t) t.shard].path + ": tensor " + t.name + " names layer " + std::to_string(t.layer) +
                                     " but the model has " + std::to_string(layout.n_layer));
        }
        layer_tensors[(size_t) t.layer].push_back(&t);
        if (t.repacked) continue; // not in the mapping: learned at its first mul_mat_id (learn_repacked)
        uint8_t * lo = mem.addr(t, t.file_offset);
        uint8_t * hi = lo + t.bytes;
        if (regions.empty() || i == 0 || t.shard != layout.tensors[i - 1].shard || layout.tensors[i - 1].repacked) {
            regions.emplace_back(lo, hi);
        } else {
            regions.back().second = hi;
        }
    }
    for (const auto & lt : layer_tensors) n_proj = std::max<int32_t>(n_proj, (int32_t) lt.size());
    for (size_t l = 0; l < layer_tensors.size(); l++) {
        for (size_t j = 0; j < layer_tensors[l].size(); j++) {
            const expert_tensor & t = *layer_tensors[l][j];
            if (t.repacked) continue;
            tensor_index.push_back({ mem.addr(t, t.file_offset), { (int32_t) l, (int32_t) j } });
        }
    }
    std::sort(tensor_index.begin(), tensor_index.end());
}

void streamer::setup_memory() {
    // Redirect when mul_mat_id can be told where an expert is (BMOE_STREAM_CANONICAL=1 forces the
    // in-place mapping, which works without patch 0002).
    const char * canon = std::getenv("BMOE_STREAM_CANONICAL");
    redirect = streamer_overlap_supported() && !(canon && *canon && *canon != '0');
    if (!redirect) {
        mem.setup(mem.bases, layout, model_fds);
    }
    if (cfg.dense_weights == dense_weights_mode::anon) {
        for (size_t i = 0; i < layout.shards.size(); i++) {
            if (mem.bases[i]) mem.make_dense_anonymous(layout, (int32_t) i, model_fds[i]);
        }
    }
    if (!redirect) return;
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
    pool.init(sub, layout.n_layer * layout.n_expert, cfg.huge_pages);
}

void streamer::size_cache() {
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
}

streamer::~streamer() {
    streamer_unregister(this);
    lanes.reset(); // joins the lanes before the memory they write goes away
    for (int fd : model_fds) close(fd);
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
    const auto name = [](mode_setting m) { return m == mode_setting::on ? "on" : m == mode_setting::off ? "off" : "auto"; };
    i.overlap             = modes.chosen().overlap;
    i.overlap_mode        = name(cfg.overlap);
    i.route_ahead         = modes.chosen().ahead;
    i.route_ahead_mode    = name(cfg.route_ahead);
    if (modes.arms().size() > 1) {
        for (const auto & a : modes.arms()) i.probe.push_back({ a.mode.overlap, a.mode.ahead, a.median_ms, a.timed });
    }
    i.probes            = modes.probes();
    i.drift_probes      = modes.drift_probes();
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




void streamer::begin_decode(std::atomic<bool> * abort) {
    abort_flag = abort;
    hits = misses = pf_issued = pf_useful = 0;
    ahead_routed = ahead_correct = ahead_read = ahead_wasted = 0;
    ahead_layer = -1;
    io_wait_ms = stall_ms = mgmt_ms = evict_wait_ms = 0;
    bytes0 = lanes->bytes_read.load();
    busy0  = lanes->busy_ns.load();
    current_layer = -1;
    decode_tokens = 0;
    const decode_mode m = modes.next();
    overlap_now   = m.overlap;
    ahead_now     = m.ahead;
    {
        std::lock_guard<std::mutex> lock(err_mu);
        err.clear();
    }
    // A file changed under us would feed garbage into the experts: refuse instead.
    for (size_t i = 0; i < layout.shards.size(); i++) {
        const layout_shard & sh = layout.shards[i];
        struct stat st{};
        if (fstat(model_fds[i], &st) != 0 || (uint64_t) st.st_size != sh.file_size || mtime_ns(st) != model_mtime_ns[i]) {
            fail(sh.path + ": the model file changed on disk while streaming (size or modification time differs from load)");
            break;
        }
        struct stat st_path{};
        if (stat(sh.path.c_str(), &st_path) != 0 || st_path.st_ino != st.st_ino) {
            fail(sh.path + ": the model file was replaced or removed while streaming");
            break;
        }
    }
}

void streamer::end_decode(token_metrics & m) {
    // A prompt may have grown the pool to hold a whole layer's union: give that memory back.
    const double t0 = now_ms();
    const int32_t target = min_slots();
    if ((int32_t) slot_owner.size() > target) {
        set_pool_slots(target);
    }
    mgmt_ms += now_ms() - t0;
    // Waiting for a victim's read is I/O on the decode thread: serial I/O, or an overlap stall.
    mgmt_ms = std::max(0.0, mgmt_ms - evict_wait_ms);
    (overlap_now ? stall_ms : io_wait_ms) += evict_wait_ms;
    total_hits += hits;
    total_misses += misses;
    m.prefetch_issued      = pf_issued;
    m.prefetch_useful      = pf_useful;
    m.ahead_routed         = ahead_routed;
    m.ahead_correct        = ahead_correct;
    m.ahead_read           = ahead_read;
    m.ahead_wasted_bytes   = ahead_wasted;
    m.read_bytes           = lanes->bytes_read.load() - bytes0;
    m.expert_hits          = hits;
    m.expert_misses        = misses;
    m.mgmt_ms              = mgmt_ms;
    m.cache_resident_bytes = resident_bytes();
    m.overlapped           = overlap_now ? 1 : 0;
    m.ahead_on             = ahead_now ? 1 : 0;
    modes.record({ overlap_now, ahead_now }, decode_tokens == 1, m.wall_ms);
    if (overlap_now) {
        m.io_ms    = (double) (lanes->busy_ns.load() - busy0) / 1e6;
        m.stall_ms = stall_ms;
        m.compute_ms = std::max(0.0, m.wall_ms - stall_ms - mgmt_ms);
    } else {
        m.io_ms      = io_wait_ms;
        m.compute_ms = std::max(0.0, m.wall_ms - io_wait_ms - mgmt_ms);
    }
    abort_flag = nullptr;
}

bool streamer::learn_repacked(const ggml_tensor * w) {
    const ggml_tensor * root = w;
    while (root->view_src) root = root->view_src;
    int32_t layer = -1;
    expert_proj proj;
    if (!expert_tensor_name(root->name, &layer, &proj)) return true; // not an expert tensor: not ours
    if (layer < 0 || layer >= layout.n_layer) return true;
    const auto & lt = layer_tensors[(size_t) layer];
    for (size_t j = 0; j < lt.size(); j++) {
        if (lt[j]->name != root->name) continue;
        const char * buft = root->buffer ? ggml_backend_buft_name(ggml_backend_buffer_get_type(root->buffer)) : "none";
        if (!lt[j]->repacked || std::strcmp(buft, "CPU_REPACK") != 0 || w->data != root->data) {
            fail(std::string("expert tensor ") + root->name + " is in buffer " + buft + (lt[j]->repacked ? " but was expected repacked (CPU_REPACK)" : " but was expected in the mapping") +
                 "; refusing to stream it");
            return false;
        }
        uint8_t * lo = (uint8_t *) root->data;
        regions.emplace_back(lo, lo + ggml_nbytes(root));
        const auto key = std::make_pair((const void *) lo, std::make_pair((int32_t) layer, (int32_t) j));
        tensor_index.insert(std::upper_bound(tensor_index.begin(), tensor_index.end(), key), key);
        return true;
    }
    return true;
}

bool streamer::on_eval(ggml_tensor * t, bool ask) {
    static constexpr char ROUTING[] = "ffn_moe_topk-";
    const bool routing = std::strncmp(t->name, ROUTING, sizeof(ROUTING) - 1) == 0;
    if (ask) {
        const ggml_tensor * w = t->op == GGML_OP_MUL_MAT_ID ? t->src[0] : nullptr;
        bool ours = w && owns(w->data);
        if (w && !ours && cfg.repack) {
            // With --repack an expert's weights sit in CPU_REPACK, outside the mapping: first seen here.
            if (!learn_repacked(w)) return routing;
            ours = owns(w->data);
        }
        if (ours) {
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

}  // namespace bmoe
