#pragma once
// Reading option objects from JS with errors that name the field.
#include <napi.h>

#include <string>

namespace bmoe {

inline Napi::Object arg_object(const Napi::CallbackInfo & info, size_t i, const char * what) {
    if (info.Length() <= i || !info[i].IsObject()) {
        throw Napi::TypeError::New(info.Env(), std::string(what) + " must be an object");
    }
    return info[i].As<Napi::Object>();
}

inline double opt_number(const Napi::Object & o, const char * key, double def) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined() || v.IsNull()) return def;
    if (!v.IsNumber()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
}

inline int64_t opt_int(const Napi::Object & o, const char * key, int64_t def, int64_t lo, int64_t hi) {
    const double d = opt_number(o, key, (double) def);
    if (d != (double) (int64_t) d || d < (double) lo || d > (double) hi) {
        throw Napi::RangeError::New(o.Env(), std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                                                  std::to_string(hi) + "], got " + std::to_string(d));
    }
    return (int64_t) d;
}

inline bool opt_bool(const Napi::Object & o, const char * key, bool def) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined() || v.IsNull()) return def;
    if (!v.IsBoolean()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a boolean");
    return v.As<Napi::Boolean>().Value();
}

inline std::string opt_string(const Napi::Object & o, const char * key, const std::string & def) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined() || v.IsNull()) return def;
    if (!v.IsString()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a string");
    return v.As<Napi::String>().Utf8Value();
}

}  // namespace bmoe
