#include "model_state.h"

#include "log_capture.h"

#include "chat.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

model_state::~model_state() {
    if (chat_templates) common_chat_templates_free(chat_templates);
    if (chatml) common_chat_templates_free(chatml);
    if (model) llama_model_free(model);
}

std::shared_ptr<model_state> model_state_load(const model_load_params & p) {
    struct stat st{};
    if (stat(p.path.c_str(), &st) != 0) {
        throw std::runtime_error(p.path + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        throw std::runtime_error(p.path + ": not a regular file");
    }

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers    = 0;
    mp.load_mode       = p.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    mp.use_extra_bufts = p.repack;
    std::vector<llama_model_kv_override> kv = p.kv_overrides;
    if (!kv.empty()) {
        kv.emplace_back();
        kv.back().key[0] = '\0';
        mp.kv_overrides = kv.data();
    }

    log_capture_reset();
    llama_model * model = llama_model_load_from_file(p.path.c_str(), mp);
    if (!model) {
        std::string why = log_capture_last_error();
        throw std::runtime_error(p.path + ": llama.cpp could not load the model" + (why.empty() ? "" : ": " + why));
    }
    auto st_ptr = std::make_shared<model_state>();
    st_ptr->model = model;
    st_ptr->path  = p.path;
    try {
        st_ptr->chat_templates = common_chat_templates_init(model, "").release();
        st_ptr->chatml         = common_chat_templates_init(model, "chatml").release();
    } catch (const std::exception & e) {
        throw std::runtime_error(p.path + ": chat template: " + e.what());
    }
    return st_ptr;
}
