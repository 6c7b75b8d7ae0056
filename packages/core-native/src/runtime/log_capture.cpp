#include "bmoe/runtime/log_capture.h"

#include "ggml.h"
#include "llama.h"
#include "log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace bmoe {

namespace {
std::mutex               g_mutex;
std::vector<std::string> g_errors;  // error messages since the last reset, in order
bool                     g_forward = false;
ggml_log_level           g_pending_level = GGML_LOG_LEVEL_NONE; // a message may arrive in pieces (CONT)

std::string one_line(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    for (char & c : s) {
        if (c == '\n') c = ' ';
    }
    return s;
}

void on_log(ggml_log_level level, const char * text, void *) {
    if (g_forward) {
        std::fputs(text, stderr);
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    if (level != GGML_LOG_LEVEL_CONT) {
        g_pending_level = level;
        if (level == GGML_LOG_LEVEL_ERROR) g_errors.emplace_back();
    }
    if (g_pending_level != GGML_LOG_LEVEL_ERROR || g_errors.empty() || g_errors.size() > 64) {
        return;
    }
    g_errors.back() += text;
}

// "llama_model_load: error loading model: missing tensor 'x'" -> "missing tensor 'x'": the
// function names and the generic wrapper say nothing to a user.
std::string strip_prefixes(std::string s) {
    for (const char * p : { "error loading model: ", "error loading model hyperparameters: ",
                            "error loading model vocabulary: " }) {
        const size_t at = s.find(p);
        if (at != std::string::npos) {
            s = s.substr(at + std::strlen(p));
            break;
        }
    }
    // A leading "function_name: " (one identifier, no spaces) names code, not the problem.
    const size_t colon = s.find(": ");
    if (colon != std::string::npos && s.find(' ') > colon) s = s.substr(colon + 2);
    return s;
}
}  // namespace

void log_capture_install() {
    const char * env = std::getenv("BMOE_LLAMA_LOG");
    g_forward = env && *env && *env != '0';
    llama_log_set(on_log, nullptr);
    // llama.cpp's common library logs on its own (chat parsing, samplers: "unparsed output", ...);
    // its errors reach callers as exceptions, so the log stays quiet unless forwarding is on.
    if (!g_forward) common_log_pause(common_log_main());
}

ggml_log_callback log_capture_callback() {
    return on_log;
}

void log_capture_reset() {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_errors.clear();
}

std::string log_capture_first_error() {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const std::string & e : g_errors) {
        std::string line = one_line(e);
        if (!line.empty()) return strip_prefixes(line);
    }
    return "";
}

}  // namespace bmoe
