// The native addon's way to run blocking work off the JS thread: `work` runs on libuv's thread
// pool, the returned promise resolves with `to_js(result)` or rejects with the message of what
// `work` threw. Whatever `work` captures (the model's shared state) stays alive until it ends.
#pragma once

#include <napi.h>

#include <exception>
#include <functional>
#include <utility>

namespace bmoe {

template <class Result> struct promise_worker : public Napi::AsyncWorker {
    std::function<Result()>                         work;
    std::function<Napi::Value(Napi::Env, Result &)> to_js;
    Result                                          result{};
    Napi::Promise::Deferred                         deferred;

    promise_worker(Napi::Env env, std::function<Result()> w, std::function<Napi::Value(Napi::Env, Result &)> js)
        : Napi::AsyncWorker(env), work(std::move(w)), to_js(std::move(js)), deferred(Napi::Promise::Deferred::New(env)) {}

    void Execute() override {
        try {
            result = work();
        } catch (const std::exception & e) {
            SetError(e.what());
        }
    }
    void OnOK() override { deferred.Resolve(to_js(Env(), result)); }
    void OnError(const Napi::Error & e) override { deferred.Reject(e.Value()); }
};

template <class Result>
Napi::Promise run_on_worker(Napi::Env env, std::function<Result()> work, std::function<Napi::Value(Napi::Env, Result &)> to_js) {
    auto * w = new promise_worker<Result>(env, std::move(work), std::move(to_js));
    Napi::Promise promise = w->deferred.Promise();
    w->Queue();  // node-addon-api deletes the worker once it has settled
    return promise;
}

}  // namespace bmoe
