#pragma once
// A loaded model shared by its JS wrapper and every context created from it: the last owner
// frees it, so closing a model while a generation runs cannot pull weights out from under it.
#include "bmoe/stream/stream_config.h"

#include "llama.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct common_chat_templates;

namespace bmoe {

struct model_load_params {
    std::string path;
    bool        use_mmap = true;
    bool        repack   = false;   // llama.cpp's extra buffer types (CPU_REPACK)
    bool        huge_pages = true;  // THP for the weights the load copies into anonymous memory (sys/huge_pages.h; resident only)
    std::vector<llama_model_kv_override> kv_overrides; // terminated by an empty key when passed on
    stream_config stream;
    std::function<void(float)> on_progress;  // llama.cpp's load progress (0..1), on the loading thread
};

struct streamer;
struct file_guard;
struct projector;

// A lock taken in arrival order (a ticket lock): two contexts stepping one streamed model
// alternate. A plain mutex let the thread that just released it take it again at once, so one
// context could run many steps while the other waited.
struct turn_lock {
    std::mutex              m;
    std::condition_variable cv;
    uint64_t                next    = 0;
    uint64_t                serving = 0;

    void lock() {
        std::unique_lock<std::mutex> l(m);
        const uint64_t ticket = next++;
        cv.wait(l, [&] { return serving == ticket; });
    }
    void unlock() {
        {
            std::lock_guard<std::mutex> l(m);
            serving++;
        }
        cv.notify_all();
    }
};

struct model_state {
    llama_model *          model = nullptr;
    common_chat_templates * chat_templates = nullptr;  // the GGUF's own template
    common_chat_templates * chatml         = nullptr;  // ChatML, for --chatml
    std::string            path;
    std::unique_ptr<streamer> stream;  // set when the experts are streamed
    std::vector<std::unique_ptr<file_guard>> guards; // SIGBUS recovery and change check, per mapped file (shard)
    turn_lock              decode_turns; // contexts of one model decode one step at a time when streamed, in turn
    // The image projector (runtime/media), once loaded: resident, beside the streamed experts.
    // Set and read on the JS thread; a chat plan holds its own reference while it is prepared.
    std::shared_ptr<projector> proj;

    ~model_state();

    // "" while every file of the model is as loaded, else one line naming the file (file_guard::check).
    std::string file_check(bool stat_files = true) const;
};

// Throws std::runtime_error with a one-line message naming the file.
std::shared_ptr<model_state> model_state_load(const model_load_params & p);

}  // namespace bmoe
