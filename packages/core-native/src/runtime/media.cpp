#include "bmoe/runtime/media.h"

#include "bmoe/runtime/log_capture.h"

#include "mtmd-helper.h"
#include "mtmd.h"
// stb_image's implementation is compiled into libmtmd (mtmd-helper.cpp); we call it directly to
// check an image's size before decoding it, and to decode images only (libmtmd's helper would
// also take audio and, with ffmpeg, video).
#include "stb/stb_image.h"

#include <cstdio>
#include <stdexcept>

namespace bmoe {

namespace {

uint64_t fnv1a(uint64_t h, const void * data, size_t n) {
    const auto * p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

constexpr uint64_t fnv_basis = 0xcbf29ce484222325ULL;

std::string hex64(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long) v);
    return buf;
}

struct bitmap_free {
    void operator()(mtmd_bitmap * b) const { mtmd_bitmap_free(b); }
};
using bitmap_ptr = std::unique_ptr<mtmd_bitmap, bitmap_free>;

struct image_size {
    int w = 0;
    int h = 0;
    uint64_t pixels() const { return (uint64_t) w * (uint64_t) h; }
};

// One image's size from its header (nothing decoded), within the per-image bound. `n` is its
// 1-based place in the prompt, for errors.
image_size image_header(const std::string & bytes, size_t n, const image_limits & limits) {
    const std::string what = "image " + std::to_string(n);
    if (bytes.empty()) throw std::runtime_error(what + " is empty (0 bytes)");
    if (bytes.size() > (size_t) INT32_MAX) throw std::runtime_error(what + " is over 2 GiB");
    int w = 0, h = 0, comp = 0;
    if (!stbi_info_from_memory(reinterpret_cast<const stbi_uc *>(bytes.data()), (int) bytes.size(), &w, &h, &comp)) {
        throw std::runtime_error(what + ": not an image format this build reads (PNG, JPEG, GIF, BMP, TGA, PNM, PSD, HDR): " +
                                 std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown"));
    }
    const uint64_t pixels = (uint64_t) w * (uint64_t) h;
    if (w <= 0 || h <= 0) throw std::runtime_error(what + " has no pixels (" + std::to_string(w) + "x" + std::to_string(h) + ")");
    if (limits.max_pixels > 0 && pixels > limits.max_pixels) {
        throw std::runtime_error(what + " is " + std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(pixels) +
                                 " pixels, over the limit of " + std::to_string(limits.max_pixels));
    }
    return { w, h };
}

// One image's bytes as RGB (`size` from image_header), its id the hash of its pixels (the same
// picture in another file is the same image to the KV cache).
bitmap_ptr decode_image(const std::string & bytes, size_t n, image_size size) {
    const std::string what = "image " + std::to_string(n);
    int ow = 0, oh = 0, oc = 0;
    stbi_uc * rgb = stbi_load_from_memory(reinterpret_cast<const stbi_uc *>(bytes.data()), (int) bytes.size(), &ow, &oh, &oc, 3);
    if (!rgb) {
        throw std::runtime_error(what + ": the " + std::to_string(size.w) + "x" + std::to_string(size.h) + " image could not be decoded (" +
                                 std::string(stbi_failure_reason() ? stbi_failure_reason() : "damaged data") + ")");
    }
    bitmap_ptr b(mtmd_bitmap_init((uint32_t) ow, (uint32_t) oh, rgb));
    uint64_t hash = fnv1a(fnv_basis, &ow, sizeof ow);
    hash          = fnv1a(hash, &oh, sizeof oh);
    hash          = fnv1a(hash, rgb, (size_t) ow * (size_t) oh * 3);
    stbi_image_free(rgb);
    if (!b) throw std::runtime_error(what + ": could not allocate its bitmap");
    mtmd_bitmap_set_id(b.get(), hex64(hash).c_str());
    return b;
}

struct chunks_free {
    void operator()(mtmd_input_chunks * c) const { mtmd_input_chunks_free(c); }
};

}  // namespace

projector::~projector() {
    if (ctx) mtmd_free(ctx);
}

std::shared_ptr<projector> projector_load(const llama_model * model, const std::string & path, int32_t threads) {
    static std::once_flag log_once;
    std::call_once(log_once, [] { mtmd_helper_log_set(log_capture_callback(), nullptr); });
    mtmd_context_params mp = mtmd_context_params_default();
    mp.use_gpu       = false;
    mp.print_timings = false;
    mp.warmup        = false;  // a warm-up encode costs a second at load for nothing a user sees
    mp.n_threads     = threads > 0 ? threads : 1;
    mp.media_marker  = mtmd_default_marker();
    log_capture_reset();
    mtmd_context * ctx = mtmd_init_from_file(path.c_str(), model, mp);
    if (!ctx) {
        const std::string why = log_capture_first_error();
        throw std::runtime_error(path + ": not a projector (mmproj) this llama.cpp loads for this model" + (why.empty() ? "" : ": " + why));
    }
    auto p    = std::make_shared<projector>();
    p->ctx    = ctx;
    p->path   = path;
    p->vocab  = llama_model_get_vocab(model);
    p->vision = mtmd_support_vision(ctx);
    p->audio  = mtmd_support_audio(ctx);
    p->mrope  = mtmd_decode_use_mrope(ctx);
    p->marker = mtmd_get_marker(ctx) ? mtmd_get_marker(ctx) : mtmd_default_marker();
    if (!p->vision) throw std::runtime_error(path + ": this projector reads audio, not images (bmoe takes images only)");
    return p;
}

void projector_probe(const std::string & model_path, const std::string & mmproj_path, int32_t threads) {
    llama_model_params lp = llama_model_default_params();
    lp.n_gpu_layers = 0;
    lp.vocab_only   = true;  // mtmd needs the model's width and vocabulary, not its weights
    log_capture_reset();
    llama_model * model = llama_model_load_from_file(model_path.c_str(), lp);
    if (!model) {
        const std::string why = log_capture_first_error();
        throw std::runtime_error(model_path + ": llama.cpp could not load the model" + (why.empty() ? "" : ": " + why));
    }
    mtmd_helper_log_set(log_capture_callback(), nullptr);
    mtmd_context_params mp = mtmd_context_params_default();
    mp.use_gpu       = false;
    mp.print_timings = false;
    mp.warmup        = true;
    mp.n_threads     = threads > 0 ? threads : 1;
    log_capture_reset();
    mtmd_context * ctx = mtmd_init_from_file(mmproj_path.c_str(), model, mp);
    const std::string why = ctx ? "" : log_capture_first_error();
    if (ctx) mtmd_free(ctx);
    llama_model_free(model);
    if (!ctx) throw std::runtime_error(mmproj_path + ": not a projector (mmproj) this llama.cpp loads for this model" + (why.empty() ? "" : ": " + why));
}

llama_token media_token(uint64_t hash) {
    return (llama_token) (-2 - (int64_t) (hash & 0x3fffffffULL));
}

std::vector<llama_token> media_tokenize(const std::shared_ptr<projector> & proj, const std::string & text,
                                        const std::vector<std::string> & images, const image_limits & limits,
                                        bool add_special, media_prompt & out) {
    // Every image is held decoded until the prompt is tokenized: their pixels together are bounded
    // too (the bound of one), so many large images cannot take the memory of many.
    std::vector<image_size> sizes;
    uint64_t total = 0;
    for (size_t i = 0; i < images.size(); i++) {
        sizes.push_back(image_header(images[i], i + 1, limits));
        total += sizes.back().pixels();
    }
    if (limits.max_pixels > 0 && total > limits.max_pixels) {
        throw std::runtime_error("the " + std::to_string(images.size()) + " images hold " + std::to_string(total) +
                                 " pixels together, over the limit of " + std::to_string(limits.max_pixels) + " for one prompt");
    }
    std::vector<bitmap_ptr>          owned;
    std::vector<const mtmd_bitmap *> bitmaps;
    for (size_t i = 0; i < images.size(); i++) {
        owned.push_back(decode_image(images[i], i + 1, sizes[i]));
        bitmaps.push_back(owned.back().get());
    }
    std::unique_ptr<mtmd_input_chunks, chunks_free> chunks(mtmd_input_chunks_init());
    const mtmd_input_text in{ text.c_str(), text.size(), add_special, true };
    log_capture_reset();
    const int32_t rc = mtmd_tokenize(proj->ctx, chunks.get(), &in, bitmaps.data(), bitmaps.size());
    if (rc == 1) {
        throw std::runtime_error("the prompt has a different number of image markers (" + proj->marker + ") than images (" +
                                 std::to_string(images.size()) + ")");
    }
    if (rc != 0) {
        const std::string why = log_capture_first_error();
        throw std::runtime_error("the images could not be prepared for the projector" + (why.empty() ? "" : ": " + why));
    }
    out.proj = proj;
    out.spans.clear();
    std::vector<llama_token> tokens;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); i++) {
        const mtmd_input_chunk * c = mtmd_input_chunks_get(chunks.get(), i);
        const mtmd_input_chunk_type type = mtmd_input_chunk_get_type(c);
        if (type == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n = 0;
            const llama_token * t = mtmd_input_chunk_get_tokens_text(c, &n);
            tokens.insert(tokens.end(), t, t + n);
            continue;
        }
        if (type != MTMD_INPUT_CHUNK_TYPE_IMAGE) throw std::runtime_error("the prompt holds audio, which bmoe does not take");
        media_span s;
        s.start    = tokens.size();
        s.n_tokens = (int32_t) mtmd_input_chunk_get_n_tokens(c);
        s.n_pos    = mtmd_input_chunk_get_n_pos(c);
        const char * id = mtmd_input_chunk_get_id(c);
        const std::string key = std::string(id ? id : "") + "/" + std::to_string(s.n_tokens);
        s.id    = media_token(fnv1a(fnv_basis, key.data(), key.size()));
        s.chunk = std::shared_ptr<mtmd_input_chunk>(mtmd_input_chunk_copy(c), mtmd_input_chunk_free);
        tokens.insert(tokens.end(), (size_t) s.n_tokens, s.id);
        out.spans.push_back(std::move(s));
    }
    // One BOS even when the template writes its own (as chat_text_tokens keeps it).
    const llama_token bos = llama_vocab_bos(proj->vocab);
    if (bos != LLAMA_TOKEN_NULL && tokens.size() >= 2 && tokens[0] == bos && tokens[1] == bos) {
        tokens.erase(tokens.begin());
        for (media_span & s : out.spans) s.start--;
    }
    return tokens;
}

void media_eval(const media_prompt & m, llama_context * ctx, const media_span & s, llama_pos pos, int32_t seq, int32_t n_batch) {
    projector & p = *m.proj;
    const std::string where = "the image at prompt token " + std::to_string(s.start);
    // Bidirectional attention over an image (gemma) must see it in one micro-batch.
    if (mtmd_decode_use_non_causal(p.ctx, s.chunk.get()) && (uint32_t) s.n_tokens > llama_n_ubatch(ctx)) {
        throw std::runtime_error(where + " takes " + std::to_string(s.n_tokens) + " tokens, more than the context's micro-batch of " +
                                 std::to_string(llama_n_ubatch(ctx)) + " (this model attends over an image at once: raise ubatchSize)");
    }
    std::lock_guard<std::mutex> lock(p.encode_mu);
    llama_pos new_pos = pos;
    log_capture_reset();
    const int32_t rc = mtmd_helper_eval_chunk_single(p.ctx, ctx, s.chunk.get(), pos, seq, n_batch, false, &new_pos);
    if (rc != 0) {
        const std::string why = log_capture_first_error();
        throw std::runtime_error(where + " could not be evaluated (code " + std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
    }
}

}  // namespace bmoe
