#include "bmoe/runtime/chat_format.h"

#include "bmoe/runtime/model_state.h"
#include "bmoe/runtime/template_bounds.h"

#include "chat.h"

#include <stdexcept>

namespace bmoe {

std::string chat_format(const model_state & m, const std::vector<chat_message> & msgs, const chat_format_options & o) {
    common_chat_templates_inputs in;
    for (const auto & msg : msgs) {
        common_chat_msg cm;
        cm.role    = msg.role;
        cm.content = msg.content;
        in.messages.push_back(std::move(cm));
    }
    in.add_generation_prompt = o.add_assistant;
    in.use_jinja             = true;
    in.enable_thinking       = o.think;
    const common_chat_templates * t = o.chatml ? m.chatml : m.chat_templates;
    template_bounds bounds(template_bounds::render_ms);
    std::string prompt;
    try {
        prompt = common_chat_templates_apply(t, in).prompt;
    } catch (const std::exception & e) {
        throw bounds.error(e, "chat template");
    }
    if (o.add_assistant) prompt += harmony_final_suffix(prompt, o.think);
    return prompt;
}

std::string harmony_final_suffix(const std::string & prompt, bool think) {
    // Harmony (gpt-oss) templates open the analysis channel by default and ignore
    // enable_thinking: with thinking off, prime the final channel so the model answers directly.
    static const std::string harmony_open = "<|start|>assistant";
    if (!think && prompt.size() >= harmony_open.size() &&
        prompt.compare(prompt.size() - harmony_open.size(), harmony_open.size(), harmony_open) == 0) {
        return harmony_final_open;
    }
    return "";
}

}  // namespace bmoe
