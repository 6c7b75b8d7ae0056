#include "bmoe/limits/one_line.h"

#include <algorithm>

namespace bmoe {

std::string one_line_clip(const std::string & s, size_t max) {
    std::string out;
    out.reserve(std::min(s.size(), max + 3));
    bool space = false;
    for (char c : s) {
        if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
        if (out.size() >= max) {
            out += "...";
            break;
        }
    }
    return out;
}

}  // namespace bmoe
