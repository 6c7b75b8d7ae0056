#pragma once
// JS class `Context`: one llama_context with its own decode thread. generate() returns a Promise
// and delivers tokens through a thread-safe function, so Node's event loop never waits on a decode.
#include "bmoe/runtime/generator.h"
#include "bmoe/runtime/model_state.h"

#include "params.h"

#include <napi.h>

#include <memory>
#include <thread>

namespace bmoe {


struct generate_job;

struct context_wrap : public Napi::ObjectWrap<context_wrap> {
    static Napi::FunctionReference * constructor;
    static Napi::Object create(Napi::Env env, std::shared_ptr<model_state> model, const context_params & p);

    explicit context_wrap(const Napi::CallbackInfo & info);
    ~context_wrap() override;

    std::shared_ptr<model_state> model;
    llama_context *              ctx = nullptr;
    // The compute threads, kept for the context's life (freed after it).
    struct ggml_threadpool *     threadpool = nullptr;
    std::unique_ptr<generator>   gen;
    std::thread                  worker;
    bool                         busy          = false;
    bool                         close_pending = false;

    Napi::Value generate(const Napi::CallbackInfo & info);
    Napi::Value abort(const Napi::CallbackInfo & info);
    Napi::Value reset(const Napi::CallbackInfo & info);
    Napi::Value close(const Napi::CallbackInfo & info);

    void free_context();
    void finish_job(Napi::Env env, generate_job * job);
};

}  // namespace bmoe
