#pragma once
// A prepared prompt's images between JavaScript calls (addon/model_media.cpp): prepareChat hands
// out an opaque, type-tagged handle that generate takes back.
#include "params.h"

#include "bmoe/runtime/chat_plan.h"
#include "bmoe/runtime/media.h"
#include "bmoe/runtime/model_state.h"

#include <napi.h>

#include <memory>

namespace bmoe {

Napi::Value media_to_js(Napi::Env env, const std::shared_ptr<media_prompt> & m);
// Null when v is undefined or null; throws a TypeError for anything but a handle of media_to_js.
std::shared_ptr<const media_prompt> media_from_js(Napi::Env env, const Napi::Value & v);
// [{ start, tokens, positions }]: each image's first cell, its cells and the positions it takes.
Napi::Array media_spans_to_js(Napi::Env env, const media_prompt & m);
// A chat request's `images` (Uint8Array[]) and `maxImagePixels`, with the model's projector.
void read_chat_images(js_reader & r, const Napi::Object & o, model_state & st, chat_request & req);

}  // namespace bmoe
