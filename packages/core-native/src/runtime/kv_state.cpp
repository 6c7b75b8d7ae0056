#include "bmoe/runtime/kv_state.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace bmoe {

namespace {

constexpr char     k_magic[8]   = { 'B', 'M', 'O', 'E', 'K', 'V', '0', '1' };
constexpr uint32_t k_meta_max   = 1u << 20;

// 64-bit, eight bytes at a time (FNV-1a's constants over words): a damaged or cut file is caught
// at several hundred MB/s, where the byte-wise hash would add seconds to a big model's restore.
struct checksum {
    uint64_t h = 0xcbf29ce484222325ull;
    uint8_t  tail[8]{};
    size_t   n_tail = 0;  // bytes of a word not complete yet: the sum does not depend on how data is split

    void word(const uint8_t * p) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    void add(const void * data, size_t n) {
        const auto * p = static_cast<const uint8_t *>(data);
        while (n > 0 && n_tail > 0) {
            tail[n_tail++] = *p++;
            n--;
            if (n_tail == 8) {
                word(tail);
                n_tail = 0;
            }
        }
        for (; n >= 8; p += 8, n -= 8) word(p);
        while (n-- > 0) tail[n_tail++] = *p++;
    }
    uint64_t value() const {
        uint64_t v = h;
        for (size_t i = 0; i < n_tail; i++) v = (v ^ tail[i]) * 0x100000001b3ull;
        return v;
    }
};

struct file_closer {
    void operator()(FILE * f) const { if (f) std::fclose(f); }
};
using file_ptr = std::unique_ptr<FILE, file_closer>;

std::string sys_error(const std::string & path, const char * what) {
    return path + ": " + what + ": " + std::strerror(errno);
}

// Writes n bytes and folds them into the checksum.
void put(FILE * f, checksum & sum, const void * data, size_t n, const std::string & path) {
    if (n > 0 && std::fwrite(data, 1, n, f) != n) throw std::runtime_error(sys_error(path, "cannot write the KV state"));
    sum.add(data, n);
}

struct reader {
    const std::vector<uint8_t> & buf;
    const std::string &          path;
    size_t                       at = 0;

    const uint8_t * take(size_t n, const char * what) {
        if (buf.size() - at < n) throw std::runtime_error(path + ": not a complete KV state file (cut short in its " + what + ")");
        const uint8_t * p = buf.data() + at;
        at += n;
        return p;
    }
    template <class T> T value(const char * what) {
        T v;
        std::memcpy(&v, take(sizeof(T), what), sizeof(T));
        return v;
    }
};

// At most `limit` bytes of a regular file (a FIFO, a device or a directory is refused before it
// is opened: reading one could block forever or never end).
std::vector<uint8_t> read_all(const std::string & path, uint64_t limit) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) throw std::runtime_error(sys_error(path, "cannot open the KV state"));
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(path + ": not a KV state file (not a regular file)");
    file_ptr f(std::fopen(path.c_str(), "rb"));
    if (!f) throw std::runtime_error(sys_error(path, "cannot open the KV state"));
    const uint64_t want = std::min<uint64_t>(limit, (uint64_t) st.st_size);
    std::vector<uint8_t> buf((size_t) want);
    if (want > 0 && std::fread(buf.data(), 1, buf.size(), f.get()) != buf.size()) {
        throw std::runtime_error(std::ferror(f.get()) ? sys_error(path, "cannot read the KV state")
                                                     : path + ": not a complete KV state file (it shrank while read)");
    }
    return buf;
}

// The header: magic and meta.
std::string read_meta(reader & r) {
    if (std::memcmp(r.take(sizeof(k_magic), "header"), k_magic, sizeof(k_magic)) != 0) {
        throw std::runtime_error(r.path + ": not a bmoe KV state file (bad magic)");
    }
    const uint32_t n = r.value<uint32_t>("header");
    if (n > k_meta_max) throw std::runtime_error(r.path + ": not a bmoe KV state file (a header of " + std::to_string(n) + " bytes)");
    const uint8_t * p = r.take(n, "header");
    return std::string(reinterpret_cast<const char *>(p), n);
}

}  // namespace

uint64_t kv_state_save(llama_context * ctx, int32_t seq, const std::vector<llama_token> & tokens, const std::string & meta,
                       const std::string & path) {
    std::vector<uint8_t> state(llama_state_seq_get_size(ctx, seq));
    const size_t n_state = llama_state_seq_get_data(ctx, state.data(), state.size(), seq);
    if (n_state == 0 && !state.empty()) throw std::runtime_error(path + ": llama.cpp could not copy the sequence's KV state");
    state.resize(n_state);
    const std::string tmp = path + ".tmp-" + std::to_string(getpid());
    file_ptr f(std::fopen(tmp.c_str(), "wb"));
    if (!f) throw std::runtime_error(sys_error(tmp, "cannot create the KV state"));
    try {
        checksum sum;
        const uint32_t n_meta = (uint32_t) meta.size();
        const uint32_t n_tok  = (uint32_t) tokens.size();
        const uint64_t n_st   = (uint64_t) state.size();
        put(f.get(), sum, k_magic, sizeof(k_magic), tmp);
        put(f.get(), sum, &n_meta, sizeof(n_meta), tmp);
        put(f.get(), sum, meta.data(), meta.size(), tmp);
        put(f.get(), sum, &n_tok, sizeof(n_tok), tmp);
        put(f.get(), sum, tokens.data(), tokens.size() * sizeof(llama_token), tmp);
        put(f.get(), sum, &n_st, sizeof(n_st), tmp);
        put(f.get(), sum, state.data(), state.size(), tmp);
        const uint64_t h = sum.value();
        if (std::fwrite(&h, 1, sizeof(h), f.get()) != sizeof(h)) throw std::runtime_error(sys_error(tmp, "cannot write the KV state"));
        if (std::fflush(f.get()) != 0 || fsync(fileno(f.get())) != 0) throw std::runtime_error(sys_error(tmp, "cannot write the KV state"));
        if (std::fclose(f.release()) != 0) throw std::runtime_error(sys_error(tmp, "cannot write the KV state"));
        if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(sys_error(path, "cannot rename the KV state into place"));
    } catch (...) {
        f.reset();
        std::remove(tmp.c_str());
        throw;
    }
    return sizeof(k_magic) + 4 + meta.size() + 4 + tokens.size() * sizeof(llama_token) + 8 + state.size() + 8;
}

std::string kv_state_meta(const std::string & path) {
    const std::vector<uint8_t> head = read_all(path, sizeof(k_magic) + 4 + k_meta_max);
    reader r{ head, path };
    return read_meta(r);
}

// The largest state a sequence of n tokens can have: each layer's K and V rows, at most 4 × the
// embedding of f32 each (llama.cpp's caches are f16 by default), plus its fixed parts. A file
// that claims more is refused before it is read, so no file can make a restore allocate
// without bound.
static uint64_t state_bound(const llama_context * ctx, uint64_t n_tokens) {
    const llama_model * m = llama_get_model(ctx);
    return n_tokens * (uint64_t) llama_model_n_layer(m) * 4 * (uint64_t) llama_model_n_embd(m) * 4 + (16u << 20);
}

std::vector<llama_token> kv_state_load(llama_context * ctx, int32_t seq, const std::string & meta, const std::string & path) {
    const uint64_t head_max = sizeof(k_magic) + 4 + k_meta_max + 4 + (uint64_t) llama_n_ctx_seq(ctx) * sizeof(llama_token) + 8;
    const std::vector<uint8_t> buf = read_all(path, head_max + state_bound(ctx, llama_n_ctx_seq(ctx)) + 8);
    reader r{ buf, path };
    if (read_meta(r) != meta) {
        throw std::runtime_error(path + ": the KV state was saved for another model or other context parameters");
    }
    const uint32_t n_tok = r.value<uint32_t>("tokens");
    if (n_tok == 0 || n_tok >= llama_n_ctx_seq(ctx)) {
        throw std::runtime_error(path + ": the KV state holds " + std::to_string(n_tok) + " tokens; the context holds " +
                                 std::to_string(llama_n_ctx_seq(ctx)));
    }
    std::vector<llama_token> tokens(n_tok);
    std::memcpy(tokens.data(), r.take((size_t) n_tok * sizeof(llama_token), "tokens"), (size_t) n_tok * sizeof(llama_token));
    const uint64_t n_st = r.value<uint64_t>("state");
    if (n_st > state_bound(ctx, n_tok)) {
        throw std::runtime_error(path + ": not a KV state file of this model (its state claims " + std::to_string(n_st) + " bytes for " +
                                 std::to_string(n_tok) + " tokens)");
    }
    if (n_st > buf.size()) throw std::runtime_error(path + ": not a complete KV state file (cut short in its state)");
    const uint8_t * st = r.take((size_t) n_st, "state");
    checksum sum;
    sum.add(buf.data(), r.at);
    if (r.value<uint64_t>("checksum") != sum.value() || r.at != buf.size()) {
        throw std::runtime_error(path + ": the KV state file is damaged (its checksum does not match)");
    }
    llama_memory_seq_rm(llama_get_memory(ctx), seq, -1, -1);
    if (llama_state_seq_set_data(ctx, st, (size_t) n_st, seq) != n_st) {
        llama_memory_seq_rm(llama_get_memory(ctx), seq, -1, -1);
        throw std::runtime_error(path + ": llama.cpp refused the KV state (saved by another build or context?)");
    }
    return tokens;
}

}  // namespace bmoe
