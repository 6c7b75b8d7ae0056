#include "bmoe/runtime/model_state.h"
#include "bmoe/runtime/template_bounds.h"

#include "bmoe/runtime/log_capture.h"

#include "bmoe/contract/layout.h"
#include "bmoe/layout/expert_layout.h"
#include "bmoe/layout/model_files.h"
#include "bmoe/stream/streamer.h"
#include "bmoe/sys/file_maps.h"
#include "bmoe/sys/huge_pages.h"
#include "bmoe/vm/expert_memory.h"
#include "bmoe/vm/file_guard.h"

#include "chat.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace bmoe {

namespace {

// llama.cpp's load progress, and what its first call marks: the load's buffers are allocated
// and not yet filled, the moment to advise huge pages for them (sys/huge_pages.h).
struct load_progress {
    static constexpr size_t huge_min_bytes = (size_t) 4 << 20;

    const std::function<void(float)> * user = nullptr;
    bool                               huge = false;
    std::vector<mem_range>             anon_before;
    bool                               called = false;

    static bool callback(float progress, void * data) {
        auto * lp = static_cast<load_progress *>(data);
        if (!lp->called) {
            lp->called = true;
            if (lp->huge) advise_huge(new_huge_ranges(lp->anon_before, anon_mappings(), huge_min_bytes));
        }
        if (lp->user && *lp->user) (*lp->user)(progress);
        return true;
    }
};

}  // namespace

model_state::~model_state() {
    guards.clear(); // unregister before the mappings go away
    stream.reset(); // before the model: its mapping holds the streamed expert memory
    if (chat_templates) common_chat_templates_free(chat_templates);
    if (chatml) common_chat_templates_free(chatml);
    if (model) llama_model_free(model);
}

std::string model_state::file_check(bool stat_files) const {
    for (const auto & g : guards) {
        std::string why = g->check(stat_files);
        if (!why.empty()) return why;
    }
    return "";
}

namespace {

// The streamer of a loaded model: the top-k in force (the model's, or an override), each shard's
// mapping base, and the options (with --repack, experts are cached in llama.cpp's CPU_REPACK
// layout, converted as they are read).
std::unique_ptr<streamer> make_streamer(const model_load_params & p, const expert_layout & layout,
                                        const std::vector<std::vector<file_vma>> & mapped_before) {
    int32_t top_k = layout.n_expert_used;
    const std::string key = layout.arch + ".expert_used_count";
    for (const auto & kv : p.kv_overrides) {
        if (key == kv.key && kv.tag == LLAMA_KV_OVERRIDE_TYPE_INT) top_k = (int32_t) kv.val_i64;
    }
    std::vector<uint8_t *> bases;
    for (size_t i = 0; i < layout.shards.size(); i++) bases.push_back(find_mapping_base(layout.shards[i].path, mapped_before[i]));
    stream_config sc = p.stream;
    sc.repack = p.repack;
    sc.huge_pages = p.huge_pages;
    return std::make_unique<streamer>(sc, layout, bases, top_k);
}

}  // namespace

std::shared_ptr<model_state> model_state_load(const model_load_params & p) {
    struct stat st{};
    if (stat(p.path.c_str(), &st) != 0) {
        throw std::runtime_error(p.path + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw std::runtime_error(p.path + ": not a regular file");
    }

    // Streaming reads the expert tensors into slots by their file offsets and needs the file mapped
    // (dense weights stay in the mapping). With --repack, llama.cpp places the repackable experts in
    // its CPU_REPACK buffer, which the loader leaves unfilled (cold tensors, patch 0003) and the
    // streamer fills expert by expert, converted as they are read.
    expert_layout layout;
    if (p.stream.enabled) {
        const std::string bad = stream_config_validate(p.stream);
        if (!bad.empty()) throw std::runtime_error(bad);
        if (!p.use_mmap) throw std::runtime_error("--moe-stream needs the model mapped (useMmap)");
        layout = expert_layout_read(p.path);
    }
    // The files' mappings before this load: the streamer takes the one this load makes.
    std::vector<std::vector<file_vma>> mapped_before;
    for (const auto & sh : layout.shards) mapped_before.push_back(file_mappings(sh.path));

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers    = 0;
    mp.load_mode       = p.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.use_extra_bufts = p.repack;
#ifdef BMOE_HAVE_COLD_TENSORS
    if (p.stream.enabled) mp.cold_tensors = contract::expert_tensor_pattern; // loading must not read the experts
#endif
    // A streamed model's repacked buffer is touched one expert at a time: no huge pages there.
    load_progress progress;
    progress.user = &p.on_progress;
    progress.huge = p.huge_pages && !p.stream.enabled;
    if (progress.huge) progress.anon_before = anon_mappings();
    mp.progress_callback           = load_progress::callback;
    mp.progress_callback_user_data = &progress;
    std::vector<llama_model_kv_override> kv = p.kv_overrides;
    if (!kv.empty()) {
        kv.emplace_back();
        kv.back().key[0] = '\0';
        mp.kv_overrides = kv.data();
    }

    log_capture_reset();
    llama_model * model = llama_model_load_from_file(p.path.c_str(), mp);
    if (!model) {
        std::string why = log_capture_first_error();
        throw std::runtime_error(p.path + ": llama.cpp could not load the model" + (why.empty() ? "" : ": " + why));
    }
    auto st_ptr = std::make_shared<model_state>();
    st_ptr->model = model;
    st_ptr->path  = p.path;
    if (p.stream.enabled) st_ptr->stream = make_streamer(p, layout, mapped_before);
    // After the streamer: its expert memory no longer maps the files, only the rest is guarded.
    if (p.use_mmap) {
        std::vector<std::string> files;
        if (p.stream.enabled) {
            for (const auto & sh : layout.shards) files.push_back(sh.path);
        } else {
            for (const auto & f : model_files_open(p.path)) files.push_back(f.path);
        }
        for (const std::string & f : files) st_ptr->guards.push_back(std::make_unique<file_guard>(f));
    }
    // The GGUF's template is parsed and probed here: bounded, so a hostile one fails the load.
    template_bounds bounds(template_bounds::load_ms);
    try {
        st_ptr->chat_templates = common_chat_templates_init(model, "").release();
        st_ptr->chatml         = common_chat_templates_init(model, "chatml").release();
    } catch (const std::exception & e) {
        throw bounds.error(e, p.path + ": chat template");
    }
    const std::string crossed = bounds.crossed();
    if (!crossed.empty()) throw std::runtime_error(p.path + ": chat template: " + crossed);
    return st_ptr;
}

}  // namespace bmoe
