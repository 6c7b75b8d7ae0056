// Context.embed: an embedding context's pooled vectors (runtime/embed), run on the context's
// decode thread like the other sequence work.
#include "context_wrap.h"

#include "bmoe/runtime/embed.h"

#include <memory>
#include <string>
#include <vector>

namespace bmoe {

Napi::Value context_wrap::embed(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    if (!ctx || close_pending) throw Napi::Error::New(env, "the context is closed");
    if (!embeddings) throw Napi::Error::New(env, "embed: this is not an embedding context (createContext({ embeddings: true }))");
    if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "embed: inputs must be an array of Int32Array");
    Napi::Array arr = info[0].As<Napi::Array>();
    auto inputs = std::make_shared<std::vector<std::vector<llama_token>>>();
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model->model));
    for (uint32_t i = 0; i < arr.Length(); i++) {
        Napi::Value v = arr.Get(i);
        if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
            throw Napi::TypeError::New(env, "embed: inputs[" + std::to_string(i) + "] must be an Int32Array");
        }
        Napi::Int32Array t = v.As<Napi::Int32Array>();
        std::vector<llama_token> tokens(t.Data(), t.Data() + t.ElementLength());
        for (llama_token id : tokens) {
            if (id < 0 || id >= n_vocab) throw Napi::RangeError::New(env, "embed: inputs[" + std::to_string(i) + "] has token id " + std::to_string(id) + ", outside the vocabulary");
        }
        inputs->push_back(std::move(tokens));
    }
    auto out = std::make_shared<std::vector<std::vector<float>>>();
    llama_context * c = ctx;
    model_state *   ms = model.get();
    return queue_op(
        env,
        [c, ms, inputs, out] {
            // Contexts of one streamed model decode one at a time (the streamer is shared).
            std::unique_lock<turn_lock> decode_lock(ms->decode_turns, std::defer_lock);
            if (ms->stream) decode_lock.lock();
            for (const auto & in : *inputs) out->push_back(embed_tokens(c, in));
            return (double) out->size();
        },
        [out](Napi::Env env) -> Napi::Value {
            Napi::Array a = Napi::Array::New(env, out->size());
            for (size_t i = 0; i < out->size(); i++) {
                Napi::Float32Array f = Napi::Float32Array::New(env, (*out)[i].size());
                std::copy((*out)[i].begin(), (*out)[i].end(), f.Data());
                a.Set((uint32_t) i, f);
            }
            return a;
        });
}

}  // namespace bmoe
