#pragma once
// Bounds on JSON a request carries (messages, tools, JSON schemas), checked before it is parsed:
// llama.cpp's JSON-schema converter and its chat layer walk JSON recursively, so a schema nested
// thousands of levels deep would overflow the stack. The scan is iterative and linear.
#include <cstddef>
#include <string>
#include <string_view>

namespace bmoe {

// The deepest nesting of arrays and objects in a JSON text (strings skipped).
size_t json_depth(std::string_view text);

// "" when `text` nests at most `max_depth` levels, else one line: "<what> nests N levels, over
// the limit of max_depth".
std::string json_check_depth(std::string_view text, size_t max_depth, const std::string & what);

}  // namespace bmoe
