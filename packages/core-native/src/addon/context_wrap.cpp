#include "context_wrap.h"

#include "args.h"
#include "js_objects.h"

#include "bmoe/runtime/log_capture.h"
#include "bmoe/stream/streamer.h"

#include "ggml-cpu.h"

#include <stdexcept>

namespace bmoe {

Napi::FunctionReference * context_wrap::constructor = nullptr;

// Everything one generate() call shares between the decode thread and the JS thread.
struct generate_job {
    context_wrap *            owner = nullptr;
    generate_request          req;
    Napi::Promise::Deferred   deferred;
    Napi::ThreadSafeFunction  tsfn;
    generate_result           result;
    std::string               error;       // set by the decode thread on failure
    std::string               js_error;    // set when the JS token callback threw

    explicit generate_job(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
};


Napi::Object context_wrap::create(Napi::Env env, std::shared_ptr<model_state> model, const context_params & p) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx           = p.n_ctx;
    cp.n_batch         = p.n_batch;
    cp.n_ubatch        = std::min(p.n_ubatch, p.n_batch);
    cp.n_threads       = p.threads;
    cp.n_threads_batch = p.threads;
    cp.no_perf         = true;
    if (model->stream) {
        cp.cb_eval           = streamer::eval_callback;
        cp.cb_eval_user_data = model->stream.get();
    }
    log_capture_reset();
    llama_context * ctx = llama_init_from_model(model->model, cp);
    if (!ctx) {
        const std::string why = log_capture_first_error();
        throw Napi::Error::New(env, "could not create a context (n_ctx " + std::to_string(p.n_ctx) + ")" +
                                        (why.empty() ? "" : ": " + why));
    }
    // One thread pool for the context's life. Without it, a build without OpenMP (the prebuilt
    // binaries use ggml's own pool) creates and joins its worker threads in every graph compute:
    // once per token resident, once per MoE layer streamed (the eval callback splits the graph at
    // each routing node). Measured with bmoe-bench targets' prebuilt row (docs/benchmarks.md).
    // No polling between graphs (poll 0): a streamed decode waits for reads between them, and
    // spinning workers would take the cores from the read lanes and from the phone's other work.
    ggml_threadpool_params tpp = ggml_threadpool_params_default(p.threads);
    tpp.poll = 0;
    ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    if (!tp) {
        llama_free(ctx);
        throw Napi::Error::New(env, "could not create the compute thread pool (" + std::to_string(p.threads) + " threads)");
    }
    llama_attach_threadpool(ctx, tp, tp);
    Napi::Object obj = constructor->New({});
    context_wrap * self = context_wrap::Unwrap(obj);
    self->model   = std::move(model);
    self->ctx     = ctx;
    self->threadpool = tp;
    self->gen     = std::make_unique<generator>();
    self->gen->ctx     = ctx;
    self->gen->vocab   = llama_model_get_vocab(self->model->model);
    self->gen->n_batch = (int32_t) cp.n_batch;
    self->gen->observer = self->model->stream.get();
    if (!self->model->guards.empty()) {
        const model_state * m = self->model.get();
        self->gen->file_check = [m](bool full) { return m->file_check(full); };
    }
    llama_set_abort_callback(ctx, [](void * data) { return static_cast<generator *>(data)->abort_flag.load(); }, self->gen.get());
    return obj;
}

context_wrap::context_wrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<context_wrap>(info) {}

context_wrap::~context_wrap() {
    if (worker.joinable()) {
        gen->abort_flag.store(true);
        worker.join();
    }
    free_context();
}

void context_wrap::free_context() {
    if (ctx) {
        llama_free(ctx);
        ctx = nullptr;
    }
    if (threadpool) {
        ggml_threadpool_free(threadpool);
        threadpool = nullptr;
    }
    gen.reset();
    model.reset();
}


Napi::Value context_wrap::generate(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx || close_pending) throw Napi::Error::New(env, "the context is closed");
    if (busy) throw Napi::Error::New(env, "a generation is already running on this context");
    Napi::Object r = arg_object(info, 0, "generate(request, onToken)");
    if (info.Length() < 2 || !info[1].IsFunction()) {
        throw Napi::TypeError::New(env, "generate(request, onToken): onToken must be a function");
    }
    js_reader reader;
    generate_request req = read_generate_request(reader, r);
    throw_if_failed(env, reader);
    auto * job = new generate_job(env);
    job->owner = this;
    job->req   = std::move(req);

    Napi::Promise promise = job->deferred.Promise();
    job->tsfn = Napi::ThreadSafeFunction::New(
        env, info[1].As<Napi::Function>(), "bmoe-generate", 0, 1, job,
        [](Napi::Env env, generate_job * job) { job->owner->finish_job(env, job); });
    busy = true;
    gen->abort_flag.store(false); // here, not on the decode thread: an abort while it waits for the lock counts
    Ref(); // keep this object alive while the decode thread uses it

    generator * g = gen.get();
    model_state * ms = model.get();
    worker = std::thread([job, g, ms]() {
        std::unique_lock<std::mutex> decode_lock(ms->decode_mutex, std::defer_lock);
        if (ms->stream) decode_lock.lock();
        try {
            job->result = g->run(job->req, [job](token_event && ev) {
                auto * heap = new token_event(std::move(ev));
                const napi_status st = job->tsfn.BlockingCall(heap, [job](Napi::Env env, Napi::Function cb, token_event * e) {
                    std::unique_ptr<token_event> own(e);
                    if (!job->js_error.empty()) return;
                    try {
                        cb.Call({ token_event_to_js(env, *e) });
                    } catch (const Napi::Error & err) {
                        job->js_error = err.Message();
                        job->owner->gen->abort_flag.store(true);
                    }
                });
                if (st != napi_ok) {
                    delete heap;
                }
            });
        } catch (const std::exception & e) {
            job->error = e.what();
        }
        job->tsfn.Release();
    });
    return promise;
}

void context_wrap::finish_job(Napi::Env env, generate_job * job) {
    if (worker.joinable()) worker.join();
    busy = false;
    Napi::HandleScope scope(env);
    if (!job->js_error.empty()) {
        job->deferred.Reject(Napi::Error::New(env, "onToken threw: " + job->js_error).Value());
    } else if (!job->error.empty()) {
        job->deferred.Reject(Napi::Error::New(env, job->error).Value());
    } else {
        job->deferred.Resolve(generate_result_to_js(env, job->result));
    }
    delete job;
    if (close_pending) {
        free_context();
    }
    Unref();
}

Napi::Value context_wrap::abort(const Napi::CallbackInfo & info) {
    if (gen) gen->abort_flag.store(true);
    return info.Env().Undefined();
}

Napi::Value context_wrap::reset(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx) throw Napi::Error::New(env, "the context is closed");
    if (busy) throw Napi::Error::New(env, "cannot reset while a generation is running");
    gen->reset();
    return env.Undefined();
}

Napi::Value context_wrap::close(const Napi::CallbackInfo & info) {
    if (busy) {
        gen->abort_flag.store(true);
        close_pending = true; // freed when the running generation has unwound
    } else {
        free_context();
    }
    return info.Env().Undefined();
}

}  // namespace bmoe
