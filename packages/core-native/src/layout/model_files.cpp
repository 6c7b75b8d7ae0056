#include "bmoe/layout/model_files.h"

#include "llama.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace bmoe {

int64_t gguf_int(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return -1;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
        case GGUF_TYPE_INT32:  return gguf_get_val_i32(g, id);
        case GGUF_TYPE_UINT64: return (int64_t) gguf_get_val_u64(g, id);
        case GGUF_TYPE_INT64:  return gguf_get_val_i64(g, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(g, id);
        case GGUF_TYPE_INT16:  return gguf_get_val_i16(g, id);
        case GGUF_TYPE_UINT8:  return gguf_get_val_u8(g, id);
        default:               return -1;
    }
}

namespace {

std::string arch_of(const gguf_context * g) {
    const int64_t id = gguf_find_key(g, "general.architecture");
    return id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_STRING ? gguf_get_val_str(g, id) : "";
}

model_file open_one(const std::string & path, const std::string & what) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) {
        throw std::runtime_error(path + ": " + (errno == ENOENT && !what.empty() ? "missing " + what : std::strerror(errno)));
    }
    model_file f;
    f.path      = path;
    f.file_size = (uint64_t) st.st_size;
    ggml_context * meta = nullptr;
    gguf_init_params params{ /*no_alloc*/ true, /*ctx*/ &meta };
    f.header.reset(gguf_init_from_file(path.c_str(), params));
    f.meta.reset(meta);
    if (!f.header) {
        throw std::runtime_error(path + ": not a readable GGUF file" + (what.empty() ? "" : " (" + what + ")"));
    }
    f.data_offset = gguf_get_data_offset(f.header.get());
    return f;
}

// The path of shard `no` (0-based) of `count`, from the first shard's path; throws when the first
// shard is not named `<prefix>-00001-of-<count>.gguf` (llama.cpp finds the others by that name).
std::string shard_path(const std::string & first, int32_t no, int32_t count) {
    std::vector<char> buf(first.size() + 64);
    if (llama_split_prefix(buf.data(), buf.size(), first.c_str(), 0, count) <= 0) {
        char want[64];
        std::snprintf(want, sizeof want, "-00001-of-%05d.gguf", count);
        throw std::runtime_error(first + ": the first shard of a model split in " + std::to_string(count) +
                                 " must be named <name>" + want + " (llama.cpp finds the other shards by that name)");
    }
    const std::string prefix(buf.data());
    std::vector<char> out(prefix.size() + 64);
    llama_split_path(out.data(), out.size(), prefix.c_str(), no, count);
    return std::string(out.data());
}

void check_shard(const model_file & first, const model_file & f, int32_t no, int32_t count, int64_t n_tensors) {
    const gguf_context * g = f.header.get();
    const int64_t c = gguf_int(g, "split.count");
    if (c != count) {
        throw std::runtime_error(f.path + ": split.count is " + std::to_string(c) + " but " + first.path + " says " +
                                 std::to_string(count) + " (a shard of another split?)");
    }
    const int64_t k = gguf_int(g, "split.no");
    if (k != no) {
        throw std::runtime_error(f.path + ": split.no is " + std::to_string(k) + ", expected " + std::to_string(no) +
                                 " for shard " + std::to_string(no + 1) + " of " + std::to_string(count) + " (renamed shards?)");
    }
    const int64_t t = gguf_int(g, "split.tensors.count");
    if (t != n_tensors) {
        throw std::runtime_error(f.path + ": a shard of another model (split.tensors.count " + std::to_string(t) + ", " +
                                 first.path + " says " + std::to_string(n_tensors) + ")");
    }
    const std::string a = arch_of(g);
    if (!a.empty() && a != arch_of(first.header.get())) {
        throw std::runtime_error(f.path + ": a shard of another model (architecture " + a + ", " + first.path + " is " +
                                 arch_of(first.header.get()) + ")");
    }
}

}  // namespace

std::vector<model_file> model_files_open(const std::string & path) {
    std::vector<model_file> files;
    files.push_back(open_one(path, ""));
    const gguf_context * g0    = files[0].header.get();
    const int64_t        count = gguf_int(g0, "split.count");
    const int64_t        no    = gguf_int(g0, "split.no");
    if (no > 0) {
        throw std::runtime_error(path + ": this is shard " + std::to_string(no + 1) + " of " + std::to_string(count) +
                                 "; open the model by its first shard");
    }
    if (count <= 1) return files;
    if (count > 9999) throw std::runtime_error(path + ": split.count " + std::to_string(count) + " is out of range");
    const int64_t n_tensors = gguf_int(g0, "split.tensors.count");
    for (int32_t k = 1; k < (int32_t) count; k++) {
        const std::string p = shard_path(path, k, (int32_t) count);
        files.push_back(open_one(p, "shard " + std::to_string(k + 1) + " of " + std::to_string(count) + " of " + path));
        check_shard(files[0], files.back(), k, (int32_t) count, n_tensors);
    }
    // Every tensor once, and all of them.
    std::unordered_map<std::string, size_t> owner;
    int64_t total = 0;
    for (size_t i = 0; i < files.size(); i++) {
        const gguf_context * g = files[i].header.get();
        for (int64_t t = 0; t < gguf_get_n_tensors(g); t++, total++) {
            const auto ins = owner.emplace(gguf_get_tensor_name(g, t), i);
            if (!ins.second) {
                throw std::runtime_error(files[i].path + ": tensor " + ins.first->first + " is also in " + files[ins.first->second].path +
                                         " (a shard of another model?)");
            }
        }
    }
    if (n_tensors >= 0 && total != n_tensors) {
        throw std::runtime_error(path + ": the " + std::to_string(count) + " shards hold " + std::to_string(total) +
                                 " tensors but split.tensors.count says " + std::to_string(n_tensors));
    }
    return files;
}

}  // namespace bmoe
