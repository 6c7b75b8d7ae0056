#include "bmoe/limits/json_limits.h"

namespace bmoe {

size_t json_depth(std::string_view text) {
    size_t depth = 0;
    size_t deepest = 0;
    bool   in_string = false;
    for (size_t i = 0; i < text.size(); i++) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return deepest;
}

std::string json_check_depth(std::string_view text, size_t max_depth, const std::string & what) {
    const size_t d = json_depth(text);
    if (d <= max_depth) return "";
    return what + " nests " + std::to_string(d) + " levels, over the limit of " + std::to_string(max_depth);
}

}  // namespace bmoe
