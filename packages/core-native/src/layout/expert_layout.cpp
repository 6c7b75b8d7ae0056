#include "bmoe/layout/expert_layout.h"

#include "gguf.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

namespace bmoe {

const char * const EXPERT_TENSOR_REGEX = "^blk\\.[0-9]+\\.ffn_(gate|up|down|gate_up)_exps\\.weight$";

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
    static const std::regex re(EXPERT_TENSOR_REGEX);
    std::smatch m;
    if (!std::regex_match(name, m, re)) {
        return false;
    }
    const std::string kind = m[1].str();
    if (layer) *layer = std::stoi(name.substr(4, name.find('.', 4) - 4));
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
struct gguf_deleter {
    void operator()(gguf_context * c) const { gguf_free(c); }
};

int64_t kv_int(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return -1;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
        case GGUF_TYPE_INT32:  return gguf_get_val_i32(g, id);
        case GGUF_TYPE_UINT64: return (int64_t) gguf_get_val_u64(g, id);
        case GGUF_TYPE_INT64:  return gguf_get_val_i64(g, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(g, id);
        case GGUF_TYPE_UINT8:  return gguf_get_val_u8(g, id);
        default:               return -1;
    }
}
}  // namespace

expert_layout expert_layout_read(const std::string & path) {
    expert_layout L;
    L.path = path;
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
        throw std::runtime_error(path + ": " + std::strerror(errno));
    }
    L.file_size = (uint64_t) st.st_size;
    gguf_init_params params{ /*no_alloc*/ true, /*ctx*/ nullptr };
    std::unique_ptr<gguf_context, gguf_deleter> g(gguf_init_from_file(path.c_str(), params));
    if (!g) {
        throw std::runtime_error(path + ": not a readable GGUF file");
    }
    const int64_t arch_id = gguf_find_key(g.get(), "general.architecture");
    if (arch_id < 0 || gguf_get_kv_type(g.get(), arch_id) != GGUF_TYPE_STRING) {
        throw std::runtime_error(path + ": no general.architecture");
    }
    L.arch          = gguf_get_val_str(g.get(), arch_id);
    L.n_layer       = (int32_t) kv_int(g.get(), L.arch + ".block_count");
    L.n_expert      = (int32_t) kv_int(g.get(), L.arch + ".expert_count");
    L.n_expert_used = (int32_t) kv_int(g.get(), L.arch + ".expert_used_count");
    if (L.n_expert <= 0 || L.n_expert_used <= 0) {
        throw std::runtime_error(path + ": " + L.arch + " is not a Mixture-of-Experts model (no expert_count): nothing to stream");
    }
    const size_t data_off = gguf_get_data_offset(g.get());
    L.data_offset = data_off;
    const int64_t n = gguf_get_n_tensors(g.get());
    for (int64_t i = 0; i < n; i++) {
        const std::string name = gguf_get_tensor_name(g.get(), i);
        const uint64_t size = gguf_get_tensor_size(g.get(), i);
        const uint64_t off  = data_off + gguf_get_tensor_offset(g.get(), i);
        if (off + size > L.file_size) {
            throw std::runtime_error(path + ": tensor " + name + " data ends at byte " + std::to_string(off + size) +
                                     " but the file has " + std::to_string(L.file_size) + " bytes (truncated?)");
        }
        expert_tensor t;
        if (!expert_tensor_name(name, &t.layer, &t.proj)) {
            L.dense_bytes += size;
            continue;
        }
        if (size % (uint64_t) L.n_expert != 0) {
            throw std::runtime_error(path + ": tensor " + name + " has " + std::to_string(size) + " bytes, not a multiple of " +
                                     std::to_string(L.n_expert) + " experts");
        }
        t.name        = name;
        t.file_offset = off;
        t.bytes       = size;
        t.slice_bytes = size / (uint64_t) L.n_expert;
        L.expert_bytes += size;
        L.tensors.push_back(std::move(t));
    }
    if (L.tensors.empty()) {
        throw std::runtime_error(path + ": no expert tensors (blk.N.ffn_*_exps.weight) found");
    }
    std::sort(L.tensors.begin(), L.tensors.end(), [](const expert_tensor & a, const expert_tensor & b) { return a.file_offset < b.file_offset; });
    return L;
}

}  // namespace bmoe
