// Module entry: loadModel (on a worker thread) and buildInfo.
#include "args.h"
#include "js_objects.h"
#include "surface.h"
#include "context_wrap.h"
#include "model_wrap.h"

#include "bmoe/io/read_ceiling.h"
#include "bmoe/runtime/log_capture.h"
#include "bmoe/runtime/media.h"
#include "bmoe/stream/streamer.h"

#include "llama.h"

#include <napi.h>

#include <cstring>

namespace bmoe {

#ifndef BMOE_LLAMA_COMMIT
#define BMOE_LLAMA_COMMIT "unknown"
#endif
#ifndef BMOE_VARIANT
#define BMOE_VARIANT "native"
#endif

namespace {

// Loads on a worker thread; llama.cpp's progress reaches onProgress on the JS thread, every
// value in order, before the promise settles.
struct load_worker : public Napi::AsyncProgressQueueWorker<float> {
    model_load_params            params;
    std::shared_ptr<model_state> result;
    Napi::Promise::Deferred      deferred;
    Napi::FunctionReference      on_progress;

    load_worker(Napi::Env env, model_load_params p)
        : Napi::AsyncProgressQueueWorker<float>(env), params(std::move(p)), deferred(Napi::Promise::Deferred::New(env)) {}

    void Execute(const ExecutionProgress & progress) override {
        if (!on_progress.IsEmpty()) {
            params.on_progress = [&progress](float f) { progress.Send(&f, 1); };
        }
        try {
            result = model_state_load(params);
        } catch (const std::exception & e) {
            SetError(e.what());
        }
        params.on_progress = nullptr;
    }
    void OnProgress(const float * data, size_t count) override {
        if (on_progress.IsEmpty() || count == 0) return;
        Napi::Env env = Env();
        Napi::HandleScope scope(env);
        try {
            for (size_t i = 0; i < count; i++) on_progress.Call({ Napi::Number::New(env, data[i]) });
        } catch (const Napi::Error &) {
            // A throwing callback does not stop the load (the engine wraps user callbacks anyway).
        }
    }
    void OnOK() override { deferred.Resolve(model_wrap::create(Env(), std::move(result))); }
    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
};

Napi::Value load_model(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    Napi::Object o = arg_object(info, 0, "loadModel(params)");
    js_reader         r;
    model_load_params p;
    p.path         = r.string(o, "path", "");
    p.use_mmap     = r.boolean(o, contract::model::use_mmap);
    p.repack       = r.boolean(o, contract::model::repack);
    p.huge_pages   = r.boolean(o, contract::model::huge_pages);
    p.kv_overrides = read_kv_overrides(r, o.Get("kvOverrides"));
    if (o.Get("stream").IsObject()) p.stream = read_stream_config(r, o.Get("stream").As<Napi::Object>());
    throw_if_failed(env, r);
    if (p.path.empty()) throw Napi::TypeError::New(env, "path must be a non-empty string");
    auto * w = new load_worker(env, std::move(p));
    if (o.Get("onProgress").IsFunction()) w->on_progress = Napi::Persistent(o.Get("onProgress").As<Napi::Function>());
    Napi::Promise promise = w->deferred.Promise();
    w->Queue();
    return promise;
}

Napi::Value build_info(const Napi::CallbackInfo & info) {
    return build_info_to_js(info.Env(), BMOE_LLAMA_COMMIT, BMOE_VARIANT, streamer_overlap_supported());
}

// Synchronous on purpose: the bench calls it between runs, with nothing else to do meanwhile.
Napi::Value read_ceiling(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    Napi::Object o = arg_object(info, 0, "readCeiling(params)");
    js_reader         r;
    const std::string path       = r.string(o, "path", "");
    const int32_t     lanes      = (int32_t) r.integer(o, "lanes", 4, 1, 64);
    const uint64_t    block      = (uint64_t) r.integer(o, "blockBytes", 2 << 20, 4096, 1ll << 30);
    const uint64_t    total      = (uint64_t) r.integer(o, "totalBytes", 1ll << 30, 4096, 1ll << 40);
    const uint64_t    range_lo   = (uint64_t) r.integer(o, "rangeStart", 0, 0, 1ll << 50);
    const uint64_t    range_hi   = (uint64_t) r.integer(o, "rangeEnd", 0, 0, 1ll << 50);
    const bool        odirect    = r.boolean(o, "odirect", true);
    throw_if_failed(env, r);
    if (path.empty()) throw Napi::TypeError::New(env, "path must be a non-empty string");
    try {
        const read_ceiling_result res = measure_read_ceiling(path, lanes, block, total, range_lo, range_hi, odirect);
        Napi::Object out = Napi::Object::New(env);
        out.Set("bytes", (double) res.bytes);
        out.Set("seconds", res.seconds);
        out.Set("odirect", res.odirect);
        return out;
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
}

// probeProjector(modelPath, mmprojPath, threads): projector_probe, synchronously (a child process
// runs it: binding/projector-probe.ts).
Napi::Value probe_projector(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 3 || !info[0].IsString() || !info[1].IsString() || !info[2].IsNumber()) {
        throw Napi::TypeError::New(env, "probeProjector(modelPath, mmprojPath, threads): two paths and a number");
    }
    try {
        projector_probe(info[0].As<Napi::String>(), info[1].As<Napi::String>(), info[2].As<Napi::Number>().Int32Value());
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
    return env.Undefined();
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
    log_capture_install();
    llama_backend_init();
    define_module<model_wrap, context_wrap>(env, exports, load_model, build_info, read_ceiling);
    exports.Set("probeProjector", Napi::Function::New(env, probe_projector));
    return exports;
}

}  // namespace

}  // namespace bmoe

BMOE_NODE_API_MODULE(bmoe::init)
