#pragma once
// Error messages are one short line: llama.cpp's readers and parsers may quote a whole input (a
// 100 KB grammar, a tools array) in theirs.
#include <cstddef>
#include <string>

namespace bmoe {

// `s` with newlines and runs of blanks folded to one space, cut to `max` bytes with "...".
std::string one_line_clip(const std::string & s, size_t max = 300);

}  // namespace bmoe
