// The JavaScript surface both addons present (binding/types.ts: NativeBinding, Model, Context),
// defined once: the class method tables and the module's exports. Each addon supplies wrapper
// classes with these methods and the three module functions; what differs between them (threads,
// exceptions, streaming) stays in their own files. Header-only.
#pragma once

#include <napi.h>

#include <vector>

namespace bmoe {

// Model::add_methods appends what only that addon has (the native one: the chat layer of
// llama.cpp's common library, which the wasm build lacks; binding/types.ts marks them optional).
template <class Model> void define_model_class(Napi::Env env, Napi::Object exports) {
    std::vector<Napi::ClassPropertyDescriptor<Model>> methods = {
        Model::InstanceMethod("info", &Model::info),
        Model::InstanceMethod("tokenize", &Model::tokenize),
        Model::InstanceMethod("detokenize", &Model::detokenize),
        Model::InstanceMethod("applyChatTemplate", &Model::apply_chat_template),
        Model::InstanceMethod("prepare", &Model::prepare),
        Model::InstanceMethod("fileStatus", &Model::file_status),
        Model::InstanceMethod("createContext", &Model::create_context),
        Model::InstanceMethod("close", &Model::close),
        Model::InstanceMethod("streamInfo", &Model::stream_info),
    };
    Model::add_methods(methods);
    Napi::Function fn = Model::DefineClass(env, "Model", methods);
    Model::constructor = new Napi::FunctionReference(Napi::Persistent(fn));
    exports.Set("Model", fn);
}

template <class Context> void define_context_class(Napi::Env env, Napi::Object exports) {
    Napi::Function fn = Context::DefineClass(env, "Context", {
        Context::InstanceMethod("generate", &Context::generate),
        Context::InstanceMethod("abort", &Context::abort),
        Context::InstanceMethod("reset", &Context::reset),
        Context::InstanceMethod("close", &Context::close),
        Context::InstanceMethod("cachedTokens", &Context::cached_tokens),
        Context::InstanceMethod("saveState", &Context::save_state),
        Context::InstanceMethod("loadState", &Context::load_state),
        Context::InstanceMethod("stateMeta", &Context::state_meta),
        Context::InstanceMethod("embed", &Context::embed),
    });
    Context::constructor = new Napi::FunctionReference(Napi::Persistent(fn));
    exports.Set("Context", fn);
}

using module_fn = Napi::Value (*)(const Napi::CallbackInfo &);

// NativeBinding: the two classes plus loadModel, buildInfo, readCeiling.
template <class Model, class Context>
Napi::Object define_module(Napi::Env env, Napi::Object exports, module_fn load_model, module_fn build_info, module_fn read_ceiling) {
    define_model_class<Model>(env, exports);
    define_context_class<Context>(env, exports);
    exports.Set("loadModel", Napi::Function::New(env, load_model));
    exports.Set("buildInfo", Napi::Function::New(env, build_info));
    exports.Set("readCeiling", Napi::Function::New(env, read_ceiling));
    return exports;
}

}  // namespace bmoe

// The module entry: node-addon-api's macro needs a global function name, so this wraps
// `init_fn` (a bmoe function) in one. Use once per addon, at global scope.
#define BMOE_NODE_API_MODULE(init_fn)                                                   \
    static Napi::Object bmoe_module_init(Napi::Env env, Napi::Object exports) {          \
        return init_fn(env, exports);                                                    \
    }                                                                                    \
    NODE_API_MODULE(bmoe, bmoe_module_init)
