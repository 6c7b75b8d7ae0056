#include "log_capture.h"

#include "ggml.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {
std::mutex  g_mutex;
std::string g_last_error;
std::string g_pending;   // a message may arrive in pieces (GGML_LOG_LEVEL_CONT)
bool        g_forward = false;
ggml_log_level g_pending_level = GGML_LOG_LEVEL_NONE;

void on_log(ggml_log_level level, const char * text, void *) {
    if (g_forward) {
        std::fputs(text, stderr);
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    if (level != GGML_LOG_LEVEL_CONT) {
        g_pending_level = level;
        g_pending.clear();
    }
    if (g_pending_level != GGML_LOG_LEVEL_ERROR) {
        return;
    }
    g_pending += text;
    std::string line = g_pending;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
        line.pop_back();
    }
    for (char & c : line) {
        if (c == '\n') c = ' ';
    }
    if (!line.empty()) {
        g_last_error = line;
    }
}
}  // namespace

void log_capture_install() {
    const char * env = std::getenv("BMOE_LLAMA_LOG");
    g_forward = env && *env && *env != '0';
    llama_log_set(on_log, nullptr);
}

void log_capture_reset() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_last_error.clear();
}

std::string log_capture_last_error() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_last_error;
}
