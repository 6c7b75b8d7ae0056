#pragma once
// Bounds on a GBNF grammar, checked before llama.cpp parses it. llama.cpp's grammar parser recurses
// per nesting level (20k nested parentheses overflow the stack), expands S{m,n} into n rules (with
// m > n it never stops), and its sampler keeps one stack per way the input may continue, which
// nested repetitions multiply (r1{0,1999} over r1 ::= "a"{0,1999}: millions of stacks, a first
// sampling step that does not return). This scan is iterative and linear in the text; it leaves
// syntax errors to llama.cpp, which reports them itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bmoe {

struct grammar_limits {
    size_t   max_bytes      = 1u << 20;  // the GBNF text
    size_t   max_rules      = 10000;     // rule definitions
    size_t   max_depth      = 100;       // nested parentheses
    uint64_t max_repetition = 2000;      // m and n of S{m,n} (llama.cpp's own bound on m)
    uint64_t max_expansion  = 100000;    // rules all {m,n} repetitions expand into, together
    uint64_t max_product    = 10000;     // nested repetitions multiplied, through rule references
};

// "" when the grammar is within the limits, else one line naming what crossed which limit and
// where (line number).
std::string grammar_check(std::string_view gbnf, const grammar_limits & limits = {});

}  // namespace bmoe
