// Module entry: loadModel (on a worker thread) and buildInfo.
#include "args.h"
#include "context_wrap.h"
#include "model_wrap.h"

#include "bmoe/io/read_ceiling.h"
#include "bmoe/runtime/log_capture.h"
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

struct load_worker : public Napi::AsyncWorker {
    model_load_params            params;
    std::shared_ptr<model_state> result;
    Napi::Promise::Deferred      deferred;

    load_worker(Napi::Env env, model_load_params p)
        : Napi::AsyncWorker(env), params(std::move(p)), deferred(Napi::Promise::Deferred::New(env)) {}

    void Execute() override {
        try {
            result = model_state_load(params);
        } catch (const std::exception & e) {
            SetError(e.what());
        }
    }
    void OnOK() override { deferred.Resolve(model_wrap::create(Env(), std::move(result))); }
    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
};

Napi::Value load_model(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    Napi::Object o = arg_object(info, 0, "loadModel(params)");
    model_load_params p;
    p.path     = opt_string(o, "path", "");
    p.use_mmap = opt_bool(o, "useMmap", true);
    p.repack   = opt_bool(o, "repack", false);
    if (p.path.empty()) throw Napi::TypeError::New(env, "path must be a non-empty string");
    Napi::Value kv = o.Get("kvOverrides");
    if (kv.IsArray()) {
        Napi::Array arr = kv.As<Napi::Array>();
        for (uint32_t i = 0; i < arr.Length(); i++) {
            Napi::Object e = arr.Get(i).As<Napi::Object>();
            llama_model_kv_override ov{};
            const std::string key  = opt_string(e, "key", "");
            const std::string type = opt_string(e, "type", "");
            if (key.empty() || key.size() >= sizeof(ov.key)) {
                throw Napi::RangeError::New(env, "kvOverrides[" + std::to_string(i) + "].key must be 1..127 characters");
            }
            std::strncpy(ov.key, key.c_str(), sizeof(ov.key) - 1);
            if (type == "int") {
                ov.tag = LLAMA_KV_OVERRIDE_TYPE_INT;
                ov.val_i64 = opt_int(e, "value", 0, INT64_MIN / 2, INT64_MAX / 2);
            } else if (type == "float") {
                ov.tag = LLAMA_KV_OVERRIDE_TYPE_FLOAT;
                ov.val_f64 = opt_number(e, "value", 0);
            } else if (type == "bool") {
                ov.tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
                ov.val_bool = opt_bool(e, "value", false);
            } else if (type == "str") {
                ov.tag = LLAMA_KV_OVERRIDE_TYPE_STR;
                const std::string s = opt_string(e, "value", "");
                if (s.size() >= sizeof(ov.val_str)) throw Napi::RangeError::New(env, "kvOverrides[" + std::to_string(i) + "].value is too long");
                std::strncpy(ov.val_str, s.c_str(), sizeof(ov.val_str) - 1);
            } else {
                throw Napi::TypeError::New(env, "kvOverrides[" + std::to_string(i) + "].type must be int, float, bool or str");
            }
            p.kv_overrides.push_back(ov);
        }
    }
    Napi::Value sv = o.Get("stream");
    if (sv.IsObject()) {
        Napi::Object s = sv.As<Napi::Object>();
        stream_config & c = p.stream;
        c.enabled = true;
        Napi::Value cm = s.Get("cacheMb");
        if (cm.IsString() && cm.As<Napi::String>().Utf8Value() == "auto") {
            c.cache_auto = true;
        } else {
            c.cache_mb = (uint64_t) opt_int(s, "cacheMb", 0, 0, 1ll << 24);
        }
        c.cache_ceil_mb  = (uint64_t) opt_int(s, "cacheCeilMb", 0, 0, 1ll << 24);
        c.cache_floor_mb = (uint64_t) opt_int(s, "cacheFloorMb", 1024, 0, 1ll << 24);
        c.io_threads     = (int32_t) opt_int(s, "ioThreads", 4, 1, 64);
        c.overlap        = opt_bool(s, "overlap", false);
        c.prefetch       = (int32_t) opt_int(s, "prefetch", 0, 0, 64);
        c.odirect        = opt_bool(s, "odirect", true);
        c.force_cache    = opt_bool(s, "forceCache", false);
        const std::string dw = opt_string(s, "denseWeights", "mmap");
        if (dw != "mmap" && dw != "anon") throw Napi::TypeError::New(env, "denseWeights must be mmap or anon, got " + dw);
        c.dense_weights = dw == "anon" ? dense_weights_mode::anon : dense_weights_mode::mmap;
    }
    auto * w = new load_worker(env, std::move(p));
    Napi::Promise promise = w->deferred.Promise();
    w->Queue();
    return promise;
}

Napi::Value build_info(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("llamaCommit", BMOE_LLAMA_COMMIT);
    o.Set("system", llama_print_system_info());
    o.Set("variant", BMOE_VARIANT);
    o.Set("overlapSupported", streamer_overlap_supported());
    return o;
}

// Synchronous on purpose: the bench calls it between runs, with nothing else to do meanwhile.
Napi::Value read_ceiling(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    Napi::Object o = arg_object(info, 0, "readCeiling(params)");
    const std::string path = opt_string(o, "path", "");
    if (path.empty()) throw Napi::TypeError::New(env, "path must be a non-empty string");
    try {
        const read_ceiling_result r = measure_read_ceiling(
            path, (int32_t) opt_int(o, "lanes", 4, 1, 64), (uint64_t) opt_int(o, "blockBytes", 2 << 20, 4096, 1ll << 30),
            (uint64_t) opt_int(o, "totalBytes", 1ll << 30, 4096, 1ll << 40), (uint64_t) opt_int(o, "rangeStart", 0, 0, 1ll << 50),
            (uint64_t) opt_int(o, "rangeEnd", 0, 0, 1ll << 50), opt_bool(o, "odirect", true));
        Napi::Object out = Napi::Object::New(env);
        out.Set("bytes", (double) r.bytes);
        out.Set("seconds", r.seconds);
        out.Set("odirect", r.odirect);
        return out;
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
    log_capture_install();
    llama_backend_init();
    model_wrap::init(env, exports);
    context_wrap::init(env, exports);
    exports.Set("loadModel", Napi::Function::New(env, load_model));
    exports.Set("buildInfo", Napi::Function::New(env, build_info));
    exports.Set("readCeiling", Napi::Function::New(env, read_ceiling));
    return exports;
}

}  // namespace

}  // namespace bmoe

// The module entry must be a global name for the macro.
static Napi::Object init_module(Napi::Env env, Napi::Object exports) {
    return bmoe::init(env, exports);
}

NODE_API_MODULE(bmoe, init_module)
