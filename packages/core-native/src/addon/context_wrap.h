#pragma once
// JS class `Context`: one llama_context holding nSeq sequences, and one decode thread that steps
// every running generation together (runtime/generator). generate() returns a Promise and
// delivers tokens through a thread-safe function, so Node's event loop never waits on a decode.
// Sequence work that must not overlap a decode (reset while others run, saving and loading KV
// state) is queued to the same thread and done between two steps.
#include "bmoe/runtime/generator.h"
#include "bmoe/runtime/model_state.h"

#include "params.h"

#include <napi.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace bmoe {

struct generate_job;
struct seq_op;

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
    bool                         close_pending = false;
    bool                         embeddings    = false;  // an embedding context: embed(), no generate()

    // JS thread only: the generations requested and not yet settled, and which sequences they hold.
    std::vector<generate_job *>  jobs;
    std::vector<bool>            seq_busy;
    int32_t                      ops_pending = 0;
    // onToken's `values`: one array, filled for each token just before its call (JS reads it then).
    Napi::Reference<Napi::Float64Array> token_values_js;

    // Shared with the decode thread, under `mu`.
    std::mutex                   mu;
    std::condition_variable      wake;
    std::vector<generate_job *>  inbox;   // requested, not started
    std::vector<seq_op *>        op_inbox;
    bool                         quit = false;
    std::thread                  loop_thread;

    Napi::Value generate(const Napi::CallbackInfo & info);
    Napi::Value abort(const Napi::CallbackInfo & info);
    Napi::Value reset(const Napi::CallbackInfo & info);
    Napi::Value close(const Napi::CallbackInfo & info);
    Napi::Value cached_tokens(const Napi::CallbackInfo & info);
    Napi::Value save_state(const Napi::CallbackInfo & info);
    Napi::Value load_state(const Napi::CallbackInfo & info);
    Napi::Value state_meta(const Napi::CallbackInfo & info);
    Napi::Value embed(const Napi::CallbackInfo & info);

    void free_context();
    void finish_job(Napi::Env env, generate_job * job);
    void finish_op(Napi::Env env, seq_op * op);

  private:
    // The decode thread: started with the first job, ends when the context closes.
    void loop();
    void ensure_loop();
    void stop_loop();
    // Queues `work` for the decode thread; the promise settles with its number or its error.
    Napi::Value queue_op(Napi::Env env, std::function<double()> work, std::function<Napi::Value(Napi::Env)> result = nullptr);
    int32_t     seq_arg(const Napi::CallbackInfo & info, size_t i, const char * what, bool optional);
    struct state_args {
        int32_t     seq;
        std::string path;
        std::string meta;
    };
    state_args  read_state_args(const Napi::CallbackInfo & info, const char * what);
};

}  // namespace bmoe
