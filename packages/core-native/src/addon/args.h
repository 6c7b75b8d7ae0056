#pragma once
// The native addon's argument checks: what params.h reads, thrown as JS errors naming the field.
#include "params.h"

#include <napi.h>

#include <string>

namespace bmoe {

inline Napi::Object arg_object(const Napi::CallbackInfo & info, size_t i, const char * what) {
    if (info.Length() <= i || !info[i].IsObject()) {
        throw Napi::TypeError::New(info.Env(), std::string(what) + " must be an object");
    }
    return info[i].As<Napi::Object>();
}

// Throws the reader's first problem as a JS TypeError naming the field (the native addon's way).
inline void throw_if_failed(Napi::Env env, const js_reader & r) {
    if (!r.ok()) throw Napi::TypeError::New(env, r.error);
}

}  // namespace bmoe
