// Model's images (native addon only): loadProjector / projectorInfo, a chat request's images, and
// the handle that carries a prepared prompt's images from prepareChat to generate.
#include "model_wrap.h"

#include "args.h"
#include "media_handle.h"
#include "promise_worker.h"

#include "bmoe/runtime/media.h"

#include <thread>

namespace bmoe {

namespace {

// A type tag, so a handle from elsewhere (or a forged External) is refused, never misread.
constexpr napi_type_tag media_tag = { 0x626d6f656d656469ULL, 0x615f70726f6d7074ULL };

Napi::Object projector_to_js(Napi::Env env, const projector & p) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("path", p.path);
    o.Set("vision", p.vision);
    o.Set("audio", p.audio);
    o.Set("mrope", p.mrope);
    o.Set("marker", p.marker);
    return o;
}

}  // namespace

Napi::Value media_to_js(Napi::Env env, const std::shared_ptr<media_prompt> & m) {
    auto * held = new std::shared_ptr<const media_prompt>(m);
    Napi::External<std::shared_ptr<const media_prompt>> ext = Napi::External<std::shared_ptr<const media_prompt>>::New(
        env, held, [](Napi::Env, std::shared_ptr<const media_prompt> * p) { delete p; });
    ext.TypeTag(&media_tag);
    return ext;
}

std::shared_ptr<const media_prompt> media_from_js(Napi::Env env, const Napi::Value & v) {
    if (v.IsUndefined() || v.IsNull()) return nullptr;
    if (!v.IsExternal() || !v.As<Napi::Object>().CheckTypeTag(&media_tag)) {
        throw Napi::TypeError::New(env, "media must be the media handle prepareChat returned");
    }
    return *v.As<Napi::External<std::shared_ptr<const media_prompt>>>().Data();
}

Napi::Array media_spans_to_js(Napi::Env env, const media_prompt & m) {
    Napi::Array a = Napi::Array::New(env, m.spans.size());
    for (size_t i = 0; i < m.spans.size(); i++) {
        Napi::Object o = Napi::Object::New(env);
        o.Set("start", (double) m.spans[i].start);
        o.Set("tokens", m.spans[i].n_tokens);
        o.Set("positions", m.spans[i].n_pos);
        a.Set((uint32_t) i, o);
    }
    return a;
}

void read_chat_images(js_reader & r, const Napi::Object & o, model_state & st, chat_request & req) {
    Napi::Value v = o.Get("images");
    if (v.IsUndefined() || v.IsNull()) return;
    if (!v.IsArray()) {
        r.fail("images must be an array of Uint8Array");
        return;
    }
    Napi::Array arr = v.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); i++) {
        Napi::Value item = arr.Get(i);
        if (!item.IsTypedArray() || item.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
            r.fail("images[" + std::to_string(i) + "] must be a Uint8Array (the encoded image)");
            return;
        }
        Napi::Uint8Array b = item.As<Napi::Uint8Array>();
        req.images.emplace_back(reinterpret_cast<const char *>(b.Data()), b.ElementLength());
    }
    req.limits.max_pixels = (uint64_t) r.integer(o, "maxImagePixels", 0, 0, (int64_t) 1 << 40);
    req.proj              = st.proj;
}

Napi::Value model_wrap::load_projector(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    live(env);
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "loadProjector(path, options): path must be a string");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    js_reader r;
    int32_t threads = 0;
    if (info.Length() > 1 && info[1].IsObject()) threads = (int32_t) r.integer(info[1].As<Napi::Object>(), "threads", 0, 0, 1024);
    throw_if_failed(env, r);
    if (threads == 0) threads = (int32_t) std::max(1u, std::thread::hardware_concurrency());
    std::shared_ptr<model_state> st = state;
    // Loading reads the whole projector: off the JS thread. The model takes it on the JS thread.
    return run_on_worker<std::shared_ptr<projector>>(
        env, [st, path, threads]() { return projector_load(st->model, path, threads); },
        [st](Napi::Env e, std::shared_ptr<projector> & p) -> Napi::Value {
            st->proj = p;
            return projector_to_js(e, *p);
        });
}

Napi::Value model_wrap::projector_info(const Napi::CallbackInfo & info) {
    model_state & st = live(info.Env());
    if (!st.proj) return info.Env().Null();
    return projector_to_js(info.Env(), *st.proj);
}

}  // namespace bmoe
