#pragma once
// llama.cpp reports load failures by logging them and returning null. We keep the last error
// lines so a failed load becomes a one-line JS error, and stay quiet otherwise
// (BMOE_LLAMA_LOG=1 forwards everything to stderr).
#include <string>

void log_capture_install();
// Clears the remembered error for the calling thread's next operation.
void log_capture_reset();
// The last error (or warning) llama.cpp logged since the last reset, single line; "" if none.
std::string log_capture_last_error();
