#pragma once
// JS class `Model`: a loaded llama_model plus tokenizer and chat-template helpers.
#include "bmoe/runtime/model_state.h"

#include <napi.h>

#include <memory>
#include <vector>

namespace bmoe {

struct model_wrap : public Napi::ObjectWrap<model_wrap> {
    static Napi::FunctionReference * constructor;
    static Napi::Object create(Napi::Env env, std::shared_ptr<model_state> st);

    explicit model_wrap(const Napi::CallbackInfo & info);

    std::shared_ptr<model_state> state;

    Napi::Value info(const Napi::CallbackInfo & info);
    Napi::Value tokenize(const Napi::CallbackInfo & info);
    Napi::Value detokenize(const Napi::CallbackInfo & info);
    Napi::Value apply_chat_template(const Napi::CallbackInfo & info);
    Napi::Value prepare(const Napi::CallbackInfo & info);
    Napi::Value file_status(const Napi::CallbackInfo & info);
    Napi::Value create_context(const Napi::CallbackInfo & info);
    Napi::Value close(const Napi::CallbackInfo & info);
    Napi::Value stream_info(const Napi::CallbackInfo & info);
    // The chat layer (model_chat.cpp): OpenAI-shaped requests through llama.cpp's common chat code.
    Napi::Value prepare_chat(const Napi::CallbackInfo & info);
    Napi::Value parse_chat(const Napi::CallbackInfo & info);
    Napi::Value json_schema_to_grammar(const Napi::CallbackInfo & info);
    Napi::Value check_grammar(const Napi::CallbackInfo & info);
    Napi::Value check_json_schema(const Napi::CallbackInfo & info);
    Napi::Value check_tools(const Napi::CallbackInfo & info);
    // Images (model_media.cpp): the projector (mmproj) beside the model.
    Napi::Value load_projector(const Napi::CallbackInfo & info);
    Napi::Value projector_info(const Napi::CallbackInfo & info);
    static void add_methods(std::vector<Napi::ClassPropertyDescriptor<model_wrap>> & methods);

    // Throws a JS error when the model was closed.
    model_state & live(Napi::Env env);
};

}  // namespace bmoe
