#pragma once
// llama.cpp reports load failures by logging them and returning null. We keep the error lines
// so a failed load becomes a one-line JS error with llama.cpp's reason, and stay quiet otherwise
// (BMOE_LLAMA_LOG=1 forwards everything to stderr).
#include "ggml.h"

#include <string>

namespace bmoe {

void log_capture_install();
// The callback itself, for libraries with a log of their own (libmtmd: mtmd_helper_log_set).
ggml_log_callback log_capture_callback();
// Clears the remembered error for the calling thread's next operation.
void log_capture_reset();
// The first error llama.cpp logged since the last reset (the cause; later lines such as "failed
// to load model" only repeat that it failed), one line without function-name prefixes; "" if none.
std::string log_capture_first_error();

}  // namespace bmoe
