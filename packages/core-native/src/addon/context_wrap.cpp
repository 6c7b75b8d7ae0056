#include "context_wrap.h"

#include "args.h"
#include "js_objects.h"
#include "media_handle.h"

#include "bmoe/runtime/kv_state.h"
#include "bmoe/runtime/log_capture.h"
#include "bmoe/stream/streamer.h"

#include "ggml-cpu.h"

#include <algorithm>
#include <stdexcept>

namespace bmoe {

Napi::FunctionReference * context_wrap::constructor = nullptr;

// Everything one generate() call shares between the decode thread and the JS thread.
struct generate_job {
    context_wrap *            owner = nullptr;
    generation                g;
    Napi::Promise::Deferred   deferred;
    Napi::ThreadSafeFunction  tsfn;
    std::string               js_error;    // set when the JS token callback threw

    explicit generate_job(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
};

// Sequence work done on the decode thread between two steps (saving or loading KV state, a reset).
struct seq_op {
    context_wrap *            owner = nullptr;
    std::function<double()>   work;
    double                    value = 0;
    // The op's result as JS, when it is more than a number (built on the JS thread).
    std::function<Napi::Value(Napi::Env)> result;
    std::string               error;
    Napi::Promise::Deferred   deferred;
    Napi::ThreadSafeFunction  tsfn;

    explicit seq_op(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
};

Napi::Object context_wrap::create(Napi::Env env, std::shared_ptr<model_state> model, const context_params & p) {
    if (p.n_batch < p.n_seq) {
        throw Napi::Error::New(env, "nBatch (" + std::to_string(p.n_batch) + ") must be at least nSeq (" + std::to_string(p.n_seq) +
                                        "): every sequence's next token goes in one batch");
    }
    llama_context_params cp = llama_context_default_params();
    // nCtx tokens for every sequence: llama.cpp splits n_ctx evenly between them (kv_unified off).
    cp.n_ctx           = p.n_ctx * p.n_seq;
    cp.n_seq_max       = p.n_seq;
    cp.kv_unified      = false;
    cp.n_batch         = p.n_batch;
    cp.n_ubatch        = std::min(p.n_ubatch, p.n_batch);
    cp.n_threads       = p.threads;
    cp.n_threads_batch = p.threads;
    cp.no_perf         = true;
    if (p.embeddings) {
        // One input per decode, pooled within one micro-batch.
        cp.embeddings   = true;
        cp.n_ubatch     = cp.n_batch;
        static const enum llama_pooling_type pooling[] = { LLAMA_POOLING_TYPE_UNSPECIFIED, LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_CLS,
                                                      LLAMA_POOLING_TYPE_LAST };
        cp.pooling_type = pooling[p.pooling];
    }
    if (model->stream) {
        cp.cb_eval           = streamer::eval_callback;
        cp.cb_eval_user_data = model->stream.get();
    }
    log_capture_reset();
    llama_context * ctx = llama_init_from_model(model->model, cp);
    if (!ctx) {
        const std::string why = log_capture_first_error();
        throw Napi::Error::New(env, "could not create a context (n_ctx " + std::to_string(p.n_ctx) + " × " + std::to_string(p.n_seq) +
                                        " sequences)" + (why.empty() ? "" : ": " + why));
    }
    // One thread pool for the context's life. Without it, ggml's own pool (every build bmoe makes:
    // no OpenMP) creates and joins its worker threads in every graph compute:
    // once per token resident, once per MoE layer streamed (the eval callback splits the graph at
    // each routing node). Measured with bmoe-bench targets' prebuilt row (docs/benchmarks.md).
    // Created without polling between graphs (poll 0); before each decode the generator's wait
    // policy (compute/wait_policy) sets the level: a short poll while spinning pays, none when the
    // waits are lost to the read lanes or to the phone's other work.
    ggml_threadpool_params tpp = ggml_threadpool_params_default(p.threads);
    tpp.poll = 0;
    ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    if (!tp) {
        llama_free(ctx);
        throw Napi::Error::New(env, "could not create the compute thread pool (" + std::to_string(p.threads) + " threads)");
    }
    llama_attach_threadpool(ctx, tp, tp);
    if (p.embeddings && llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_NONE) {
        llama_free(ctx);
        ggml_threadpool_free(tp);
        throw Napi::Error::New(env, "pooling: the model's own pooling is none (a vector per token); choose mean, cls or last (--pooling)");
    }
    Napi::Object obj = constructor->New({});
    context_wrap * self = context_wrap::Unwrap(obj);
    self->model      = std::move(model);
    self->ctx        = ctx;
    self->threadpool = tp;
    self->gen        = std::make_unique<generator>();
    generator & g = *self->gen;
    g.ctx      = ctx;
    g.vocab    = llama_model_get_vocab(self->model->model);
    g.n_batch  = (int32_t) cp.n_batch;
    g.n_seq    = (int32_t) p.n_seq;
    g.observer = self->model->stream.get();
    g.threadpool = tp;
    if (!self->model->guards.empty()) {
        const model_state * m = self->model.get();
        g.file_check = [m](bool full) { return m->file_check(full); };
    }
    const int32_t n_batch = g.n_batch;
    g.eval_media = [ctx, n_batch](const media_prompt & m, const media_span & s, llama_pos pos, int32_t seq) {
        media_eval(m, ctx, s, pos, seq, n_batch);
    };
    g.attach();
    self->seq_busy.assign(p.n_seq, false);
    self->embeddings = p.embeddings;
    return obj;
}

context_wrap::context_wrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<context_wrap>(info) {}

context_wrap::~context_wrap() {
    for (generate_job * j : jobs) j->g.abort.store(true);
    stop_loop();
    free_context();
}

void context_wrap::free_context() {
    stop_loop();
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

void context_wrap::ensure_loop() {
    if (!loop_thread.joinable()) loop_thread = std::thread([this] { loop(); });
}

void context_wrap::stop_loop() {
    if (!loop_thread.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(mu);
        quit = true;
    }
    wake.notify_all();
    loop_thread.join();
}

void context_wrap::loop() {
    std::vector<generate_job *> active;
    std::vector<generation *>   step_set;
    model_state *               ms = model.get();
    for (;;) {
        std::vector<generate_job *> joining;
        std::vector<seq_op *>       ops;
        {
            std::unique_lock<std::mutex> lock(mu);
            wake.wait(lock, [&] { return quit || !inbox.empty() || !op_inbox.empty() || !active.empty(); });
            if (quit && inbox.empty() && op_inbox.empty() && active.empty()) return;
            joining.swap(inbox);
            ops.swap(op_inbox);
            gen->foreground_waiting.store(false);
        }
        for (seq_op * op : ops) {
            try {
                op->value = op->work();
            } catch (const std::exception & e) {
                op->error = e.what();
            }
            op->tsfn.Release();
        }
        for (generate_job * j : joining) {
            gen->start(j->g);
            if (j->g.done) {
                j->tsfn.Release();
            } else {
                active.push_back(j);
            }
        }
        if (active.empty()) continue;
        step_set.clear();
        for (generate_job * j : active) step_set.push_back(&j->g);
        {
            // Contexts of one streamed model decode one step at a time (the streamer is shared).
            std::unique_lock<turn_lock> decode_lock(ms->decode_turns, std::defer_lock);
            if (ms->stream) decode_lock.lock();
            gen->step(step_set);
        }
        active.erase(std::remove_if(active.begin(), active.end(),
                                    [](generate_job * j) {
                                        if (!j->g.done) return false;
                                        j->tsfn.Release();
                                        return true;
                                    }),
                     active.end());
    }
}

int32_t context_wrap::seq_arg(const Napi::CallbackInfo & info, size_t i, const char * what, bool optional) {
    Napi::Env env = info.Env();
    if (info.Length() <= i || info[i].IsUndefined()) {
        if (optional) return -1;
        throw Napi::TypeError::New(env, std::string(what) + ": seq is required");
    }
    if (!info[i].IsNumber()) throw Napi::TypeError::New(env, std::string(what) + ": seq must be a number");
    const double v = info[i].As<Napi::Number>().DoubleValue();
    if (!(v >= 0 && v < (double) seq_busy.size() && v == (double) (int32_t) v)) {
        throw Napi::RangeError::New(env, std::string(what) + ": seq " + std::to_string(v) + " is not a sequence of this context (0.." +
                                             std::to_string(seq_busy.size() - 1) + ")");
    }
    return (int32_t) v;
}

Napi::Value context_wrap::generate(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx || close_pending) throw Napi::Error::New(env, "the context is closed");
    if (embeddings) throw Napi::Error::New(env, "generate: an embedding context does not generate (createContext without embeddings)");
    Napi::Object r = arg_object(info, 0, "generate(request, onToken)");
    if (info.Length() < 2 || !info[1].IsFunction()) {
        throw Napi::TypeError::New(env, "generate(request, onToken): onToken must be a function");
    }
    js_reader reader;
    generate_request req = read_generate_request(reader, r);
    throw_if_failed(env, reader);
    req.media = media_from_js(env, r.Get("media"));
    if (req.seq >= (int32_t) seq_busy.size()) {
        throw Napi::RangeError::New(env, "generate: seq " + std::to_string(req.seq) + " is not a sequence of this context (0.." +
                                             std::to_string(seq_busy.size() - 1) + ")");
    }
    if (seq_busy[(size_t) req.seq]) {
        throw Napi::Error::New(env, "a generation is already running on sequence " + std::to_string(req.seq) + " of this context");
    }
    if (token_values_js.IsEmpty()) token_values_js = Napi::Persistent(Napi::Float64Array::New(env, token_value_count));
    auto * job = new generate_job(env);
    job->owner = this;
    job->g.req = std::move(req);
    job->g.on_token = [job](token_event && ev) {
        auto * heap = new token_event(std::move(ev));
        const napi_status st = job->tsfn.BlockingCall(heap, [job](Napi::Env env, Napi::Function cb, token_event * e) {
            std::unique_ptr<token_event> own(e);
            if (!job->js_error.empty()) return;
            try {
                // onToken(piece, eog, values, extras): the record's numbers in the context's one
                // array (filled here, on the JS thread, right before the call that reads them).
                Napi::Float64Array values = job->owner->token_values_js.Value();
                token_values(*e, values.Data());
                cb.Call({ token_piece_to_js(env, *e), Napi::Boolean::New(env, e->is_eog), values, token_extras_to_js(env, *e) });
            } catch (const Napi::Error & err) {
                job->js_error = err.Message();
                job->g.abort.store(true);
            }
        });
        if (st != napi_ok) delete heap;
    };
    Napi::Promise promise = job->deferred.Promise();
    job->tsfn = Napi::ThreadSafeFunction::New(
        env, info[1].As<Napi::Function>(), "bmoe-generate", 0, 1, job,
        [](Napi::Env env, generate_job * job) { job->owner->finish_job(env, job); });
    seq_busy[(size_t) job->g.req.seq] = true;
    jobs.push_back(job);
    Ref(); // keep this object alive while the decode thread uses it
    ensure_loop();
    {
        std::lock_guard<std::mutex> lock(mu);
        inbox.push_back(job);
        if (!job->g.req.background) gen->foreground_waiting.store(true);
    }
    wake.notify_one();
    return promise;
}

void context_wrap::finish_job(Napi::Env env, generate_job * job) {
    Napi::HandleScope scope(env);
    seq_busy[(size_t) job->g.req.seq] = false;
    jobs.erase(std::find(jobs.begin(), jobs.end(), job));
    if (!job->js_error.empty()) {
        job->deferred.Reject(Napi::Error::New(env, "onToken threw: " + job->js_error).Value());
    } else if (!job->g.error.empty()) {
        job->deferred.Reject(Napi::Error::New(env, job->g.error).Value());
    } else {
        job->deferred.Resolve(generate_result_to_js(env, job->g.result));
    }
    delete job;
    if (close_pending && jobs.empty() && ops_pending == 0) free_context();
    Unref();
}

void context_wrap::finish_op(Napi::Env env, seq_op * op) {
    Napi::HandleScope scope(env);
    ops_pending--;
    if (op->error.empty()) {
        op->deferred.Resolve(op->result ? op->result(env) : Napi::Number::New(env, op->value));
    } else {
        op->deferred.Reject(Napi::Error::New(env, op->error).Value());
    }
    delete op;
    if (close_pending && jobs.empty() && ops_pending == 0) free_context();
    Unref();
}

Napi::Value context_wrap::queue_op(Napi::Env env, std::function<double()> work, std::function<Napi::Value(Napi::Env)> result) {
    auto * op = new seq_op(env);
    op->owner  = this;
    op->work   = std::move(work);
    op->result = std::move(result);
    Napi::Promise promise = op->deferred.Promise();
    op->tsfn = Napi::ThreadSafeFunction::New(
        env, Napi::Function::New(env, [](const Napi::CallbackInfo &) {}), "bmoe-seq-op", 0, 1, op,
        [](Napi::Env env, seq_op * op) { op->owner->finish_op(env, op); });
    ops_pending++;
    Ref();
    ensure_loop();
    {
        std::lock_guard<std::mutex> lock(mu);
        op_inbox.push_back(op);
    }
    wake.notify_one();
    return promise;
}

Napi::Value context_wrap::abort(const Napi::CallbackInfo & info) {
    const int32_t seq = seq_arg(info, 0, "abort", true);
    for (generate_job * j : jobs) {
        if (seq < 0 || j->g.req.seq == seq) j->g.abort.store(true);
    }
    return info.Env().Undefined();
}

Napi::Value context_wrap::reset(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx || close_pending) throw Napi::Error::New(env, "the context is closed");
    const int32_t seq = seq_arg(info, 0, "reset", true);
    for (size_t i = 0; i < seq_busy.size(); i++) {
        if (seq_busy[i] && (seq < 0 || (int32_t) i == seq)) throw Napi::Error::New(env, "cannot reset while a generation is running");
    }
    if (jobs.empty() && ops_pending == 0) {
        gen->reset(seq); // nothing decodes: at once
        return env.Undefined();
    }
    generator * g = gen.get();
    queue_op(env, [g, seq] {
        g->reset(seq);
        return 0.0;
    });
    return env.Undefined();
}

Napi::Value context_wrap::cached_tokens(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx) throw Napi::Error::New(env, "the context is closed");
    const int32_t seq = std::max(0, seq_arg(info, 0, "cachedTokens", true));
    // Only the decode thread changes a sequence's tokens, and only while it generates on it.
    if (seq_busy[(size_t) seq]) throw Napi::Error::New(env, "cachedTokens: a generation is running on sequence " + std::to_string(seq));
    const std::vector<llama_token> & c = gen->cached[(size_t) seq];
    Napi::Int32Array out = Napi::Int32Array::New(env, c.size());
    std::copy(c.begin(), c.end(), out.Data());
    return out;
}

// saveState / loadState's arguments (seq, path, meta), checked on an open context with that
// sequence idle.
context_wrap::state_args context_wrap::read_state_args(const Napi::CallbackInfo & info, const char * what) {
    Napi::Env env = info.Env();
    if (!ctx || close_pending) throw Napi::Error::New(env, "the context is closed");
    const std::string call = std::string(what) + "(seq, path, meta)";
    const int32_t seq = seq_arg(info, 0, call.c_str(), false);
    if (info.Length() < 3 || !info[1].IsString() || !info[2].IsString()) throw Napi::TypeError::New(env, call + ": path and meta must be strings");
    if (seq_busy[(size_t) seq]) throw Napi::Error::New(env, std::string(what) + ": a generation is running on sequence " + std::to_string(seq));
    return { seq, info[1].As<Napi::String>(), info[2].As<Napi::String>() };
}

Napi::Value context_wrap::save_state(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    const state_args a = read_state_args(info, "saveState");
    const int32_t seq = a.seq;
    const std::string path = a.path, meta = a.meta;
    generator * g = gen.get();
    llama_context * c = ctx;
    return queue_op(env, [g, c, seq, path, meta] {
        if (g->cached[(size_t) seq].empty()) throw std::runtime_error(path + ": nothing to save (the sequence holds no tokens)");
        return (double) kv_state_save(c, seq, g->cached[(size_t) seq], g->cached_media[(size_t) seq], meta, path);
    });
}

Napi::Value context_wrap::load_state(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    const state_args a = read_state_args(info, "loadState");
    const int32_t seq = a.seq;
    const std::string path = a.path, meta = a.meta;
    generator * g = gen.get();
    llama_context * c = ctx;
    return queue_op(env, [g, c, seq, path, meta] {
        std::vector<llama_token> & cached = g->cached[(size_t) seq];
        try {
            kv_saved saved = kv_state_load(c, seq, meta, path);
            cached                        = std::move(saved.tokens);
            g->cached_media[(size_t) seq] = std::move(saved.media);
            // A saved state does not say which entries were evaluated as a prompt: taken as all.
            g->exact[(size_t) seq]        = cached.size();
        } catch (...) {
            // A file refused before the sequence was touched leaves it as it was; one llama.cpp
            // refused midway leaves it empty.
            if (llama_memory_seq_pos_max(llama_get_memory(c), seq) < 0) {
                cached.clear();
                g->cached_media[(size_t) seq].clear();
                g->exact[(size_t) seq] = 0;
            }
            throw;
        }
        return (double) cached.size();
    });
}

Napi::Value context_wrap::state_meta(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "stateMeta(path): path must be a string");
    try {
        return Napi::String::New(env, kv_state_meta(info[0].As<Napi::String>()));
    } catch (const std::exception & e) {
        throw Napi::Error::New(env, e.what());
    }
}

Napi::Value context_wrap::close(const Napi::CallbackInfo & info) {
    if (!jobs.empty() || ops_pending > 0) {
        for (generate_job * j : jobs) j->g.abort.store(true);
        close_pending = true; // freed when the running generations have unwound
    } else {
        free_context();
    }
    return info.Env().Undefined();
}

}  // namespace bmoe
