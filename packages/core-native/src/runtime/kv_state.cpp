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

constexpr char     k_magic[8]   = { 'B', 'M', 'O', 'E', 'K', 'V', '0', '2' };
constexpr char     k_magic_v1[8] = { 'B', 'M', 'O', 'E', 'K', 'V', '0', '1' };  // no image section

// An image's record in the file.
struct span_record {
    uint32_t start;
    int32_t  n_tokens;
    int32_t  n_pos;
    int32_t  id;
};
constexpr uint32_t k_meta_max   = 64u << 20;  // a history with images keeps them as data URLs

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

// The header: magic and meta. `v1`: the file has no image section.
std::string read_meta(reader & r, bool * v1 = nullptr) {
    const uint8_t * magic = r.take(sizeof(k_magic), "header");
    const bool old = std::memcmp(magic, k_magic_v1, sizeof(k_magic_v1)) == 0;
    if (!old && std::memcmp(magic, k_magic, sizeof(k_magic)) != 0) {
        throw std::runtime_error(r.path + ": not a bmoe KV state file (bad magic)");
    }
    if (v1) *v1 = old;
    const uint32_t n = r.value<uint32_t>("header");
    if (n > k_meta_max) throw std::runtime_error(r.path + ": not a bmoe KV state file (a header of " + std::to_string(n) + " bytes)");
    const uint8_t * p = r.take(n, "header");
    return std::string(reinterpret_cast<const char *>(p), n);
}

}  // namespace

uint64_t kv_state_save(llama_context * ctx, int32_t seq, const std::vector<llama_token> & tokens,
                       const std::vector<media_span> & media, const std::string & meta, const std::string & path) {
    std::vector<span_record> spans;
    for (const media_span & s : media) spans.push_back({ (uint32_t) s.start, s.n_tokens, s.n_pos, s.id });
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
        const uint32_t n_spans = (uint32_t) spans.size();
        put(f.get(), sum, &n_spans, sizeof(n_spans), tmp);
        put(f.get(), sum, spans.data(), spans.size() * sizeof(span_record), tmp);
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
    return sizeof(k_magic) + 4 + meta.size() + 4 + tokens.size() * sizeof(llama_token) + 4 + spans.size() * sizeof(span_record) + 8 +
           state.size() + 8;
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

// The image section: each image within the tokens, in order, over cells of its own id.
static std::vector<media_span> read_spans(reader & r, const std::vector<llama_token> & tokens) {
    const uint32_t n = r.value<uint32_t>("images");
    if ((uint64_t) n * sizeof(span_record) > r.buf.size() - r.at) throw std::runtime_error(r.path + ": not a complete KV state file (cut short in its images)");
    std::vector<media_span> out;
    size_t end = 0;
    for (uint32_t i = 0; i < n; i++) {
        span_record s;
        std::memcpy(&s, r.take(sizeof(s), "images"), sizeof(s));
        const bool ok = s.start >= end && s.n_tokens > 0 && s.n_pos > 0 && s.n_pos <= s.n_tokens && is_media_token(s.id) &&
                        (uint64_t) s.start + (uint64_t) s.n_tokens <= tokens.size() &&
                        std::all_of(tokens.begin() + s.start, tokens.begin() + s.start + s.n_tokens, [&](llama_token t) { return t == s.id; });
        if (!ok) throw std::runtime_error(r.path + ": the KV state file is damaged (image " + std::to_string(i + 1) + " does not match its tokens)");
        media_span m;
        m.start    = s.start;
        m.n_tokens = s.n_tokens;
        m.n_pos    = s.n_pos;
        m.id       = s.id;
        out.push_back(m);
        end = s.start + (size_t) s.n_tokens;
    }
    return out;
}

kv_saved kv_state_load(llama_context * ctx, int32_t seq, const std::string & meta, const std::string & path) {
    const uint64_t n_ctx    = llama_n_ctx_seq(ctx);
    const uint64_t head_max = sizeof(k_magic) + 4 + k_meta_max + 4 + n_ctx * sizeof(llama_token) + 4 + n_ctx * sizeof(span_record) + 8;
    const std::vector<uint8_t> buf = read_all(path, head_max + state_bound(ctx, llama_n_ctx_seq(ctx)) + 8);
    reader r{ buf, path };
    bool v1 = false;
    if (read_meta(r, &v1) != meta) {
        throw std::runtime_error(path + ": the KV state was saved for another model or other context parameters");
    }
    const uint32_t n_tok = r.value<uint32_t>("tokens");
    if (n_tok == 0 || n_tok >= llama_n_ctx_seq(ctx)) {
        throw std::runtime_error(path + ": the KV state holds " + std::to_string(n_tok) + " tokens; the context holds " +
                                 std::to_string(llama_n_ctx_seq(ctx)));
    }
    std::vector<llama_token> tokens(n_tok);
    std::memcpy(tokens.data(), r.take((size_t) n_tok * sizeof(llama_token), "tokens"), (size_t) n_tok * sizeof(llama_token));
    kv_saved saved;
    if (!v1) saved.media = read_spans(r, tokens);
    // Every image cell belongs to an image; anything else is a vocabulary id.
    size_t covered = 0;
    for (const media_span & s : saved.media) covered += (size_t) s.n_tokens;
    if ((size_t) std::count_if(tokens.begin(), tokens.end(), [](llama_token t) { return t < 0; }) != covered) {
        throw std::runtime_error(path + ": the KV state file is damaged (token ids outside the vocabulary)");
    }
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
    saved.tokens = std::move(tokens);
    return saved;
}

}  // namespace bmoe
