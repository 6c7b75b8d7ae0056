#include "bmoe/layout/expert_layout.h"

#include "bmoe/contract/layout.h"
#include "bmoe/layout/model_files.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <set>
#include <stdexcept>

namespace bmoe {

const char * expert_proj_name(expert_proj p) {
    switch (p) {
        case expert_proj::gate:    return "gate";
        case expert_proj::up:      return "up";
        case expert_proj::down:    return "down";
        case expert_proj::gate_up: return "gate_up";
    }
    return "?";
}

bool expert_tensor_name(const std::string & name, int32_t * layer, expert_proj * proj) {
    static const std::regex re(contract::expert_tensor_pattern);
    std::smatch m;
    if (!std::regex_match(name, m, re)) {
        return false;
    }
    const std::string kind = m[2].str();
    if (layer) *layer = std::stoi(m[1].str());
    if (proj) {
        *proj = kind == "gate" ? expert_proj::gate : kind == "up" ? expert_proj::up : kind == "down" ? expert_proj::down : expert_proj::gate_up;
    }
    return true;
}

uint64_t expert_layout::unit_bytes(int32_t layer) const {
    uint64_t sum = 0;
    for (const auto & t : tensors) {
        if (t.layer == layer) sum += t.slice_bytes;
    }
    return sum;
}

uint64_t expert_layout::max_unit_bytes() const {
    uint64_t best = 0;
    for (int32_t l = 0; l < n_layer; l++) best = std::max(best, unit_bytes(l));
    return best;
}

int32_t expert_layout::n_moe_layers() const {
    std::set<int32_t> layers;
    for (const auto & t : tensors) layers.insert(t.layer);
    return (int32_t) layers.size();
}

namespace {

// Adds one file's tensors to L: experts into L.tensors, the rest into the dense bytes.
void add_file(expert_layout & L, const model_file & f, int32_t shard) {
    const gguf_context * g = f.header.get();
    layout_shard sh;
    sh.path        = f.path;
    sh.file_size   = f.file_size;
    sh.data_offset = f.data_offset;
    const int64_t n = gguf_get_n_tensors(g);
    for (int64_t i = 0; i < n; i++) {
        const std::string name = gguf_get_tensor_name(g, i);
        const uint64_t size = gguf_get_tensor_size(g, i);
        const uint64_t off  = f.data_offset + gguf_get_tensor_offset(g, i);
        if (off + size > f.file_size) {
            throw std::runtime_error(f.path + ": tensor " + name + " data ends at byte " + std::to_string(off + size) +
                                     " but the file has " + std::to_string(f.file_size) + " bytes (truncated?)");
        }
        expert_tensor t;
        if (!expert_tensor_name(name, &t.layer, &t.proj)) {
            sh.dense_bytes += size;
            continue;
        }
        if (size % (uint64_t) L.n_expert != 0) {
            throw std::runtime_error(f.path + ": tensor " + name + " has " + std::to_string(size) + " bytes, not a multiple of " +
                                     std::to_string(L.n_expert) + " experts");
        }
        t.name        = name;
        t.shard       = shard;
        t.file_offset = off;
        t.bytes       = size;
        t.slice_bytes = size / (uint64_t) L.n_expert;
        t.type        = (int32_t) gguf_get_tensor_type(g, i);
        if (const ggml_tensor * d = f.meta ? ggml_get_tensor(f.meta.get(), name.c_str()) : nullptr) {
            for (int k = 0; k < 3; k++) t.ne[k] = d->ne[k];
        }
        sh.expert_bytes += size;
        L.tensors.push_back(std::move(t));
    }
    L.file_size    += sh.file_size;
    L.expert_bytes += sh.expert_bytes;
    L.dense_bytes  += sh.dense_bytes;
    L.shards.push_back(std::move(sh));
}

}  // namespace

expert_layout expert_layout_read(const std::string & path) {
    const std::vector<model_file> files = model_files_open(path);
    const gguf_context * g = files[0].header.get();
    expert_layout L;
    L.path = path;
    const int64_t arch_id = gguf_find_key(g, "general.architecture");
    if (arch_id < 0 || gguf_get_kv_type(g, arch_id) != GGUF_TYPE_STRING) {
        throw std::runtime_error(path + ": no general.architecture");
    }
    L.arch          = gguf_get_val_str(g, arch_id);
    L.n_layer       = (int32_t) gguf_int(g, L.arch + ".block_count");
    L.n_expert      = (int32_t) gguf_int(g, L.arch + ".expert_count");
    L.n_expert_used = (int32_t) gguf_int(g, L.arch + ".expert_used_count");
    if (L.n_expert <= 0 || L.n_expert_used <= 0) {
        throw std::runtime_error(path + ": " + L.arch + " is not a Mixture-of-Experts model (no expert_count): nothing to stream");
    }
    for (size_t i = 0; i < files.size(); i++) add_file(L, files[i], (int32_t) i);
    if (L.tensors.empty()) {
        throw std::runtime_error(path + ": no expert tensors (blk.N.ffn_*_exps.weight) found");
    }
    std::sort(L.tensors.begin(), L.tensors.end(), [](const expert_tensor & a, const expert_tensor & b) {
        return a.shard != b.shard ? a.shard < b.shard : a.file_offset < b.file_offset;
    });
    return L;
}

}  // namespace bmoe
