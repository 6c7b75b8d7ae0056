#include "bmoe/limits/grammar_limits.h"

#include <algorithm>
#include <map>
#include <vector>

namespace bmoe {

namespace {

// Multiplication that stops one past the limit instead of overflowing.
uint64_t sat_mul(uint64_t a, uint64_t b, uint64_t cap) {
    if (a == 0 || b == 0) return 0;
    if (a > cap / b) return cap + 1;
    return std::min(a * b, cap + 1);
}

// What an element (or a group) contributes to its rule's stack count: a constant (literals) and,
// per referenced rule, a factor that multiplies that rule's own count.
struct terms {
    uint64_t                   constant = 0;
    std::map<size_t, uint64_t> refs;  // rule id -> the largest factor it is referenced with

    void merge(const terms & o) {
        constant = std::max(constant, o.constant);
        for (const auto & [id, f] : o.refs) refs[id] = std::max(refs[id], f);
    }
    void scale(uint64_t r, uint64_t cap) {
        constant = sat_mul(constant, r, cap);
        for (auto & kv : refs) kv.second = sat_mul(kv.second, r, cap);
    }
};

// The code point of one GBNF character at s[i] (an escape as llama.cpp's parser reads it: \xHH,
// \uHHHH, \UHHHHHHHH, or a one-character escape), i moved past it. Only whether it is 0 matters.
uint32_t grammar_char(std::string_view s, size_t & i) {
    if (s[i] != '\\' || i + 1 >= s.size()) return (uint32_t) (unsigned char) s[i++];
    const char    kind   = s[i + 1];
    const size_t  digits = kind == 'x' ? 2 : kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
    i += 2;
    if (digits == 0) return (uint32_t) (unsigned char) kind;
    uint32_t v = 0;
    for (size_t k = 0; k < digits && i < s.size(); k++, i++) {
        const char c = s[i];
        const int  d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return 1;  // not an escape llama.cpp reads: it says so
        v = v * 16 + (uint32_t) d;
    }
    return v;
}

// Whether a literal's text ("..." without the quotes) or a character class's ([...] without the
// brackets) can only be met by a NUL character. llama.cpp matches a token's text as a C string, so
// a grammar element that needs a NUL admits no token at all, and its sampler then takes one anyway
// and fails ("Unexpected empty grammar stack"). A literal holding a NUL anywhere is such an
// element; a class is when it is not negated and every character and range in it is only NUL.
bool needs_nul(std::string_view body, bool is_class) {
    if (is_class && !body.empty() && body[0] == '^') return false;
    bool only_nul = is_class && !body.empty();
    for (size_t i = 0; i < body.size();) {
        const uint32_t lo = grammar_char(body, i);
        uint32_t       hi = lo;
        if (is_class && i + 1 < body.size() && body[i] == '-') {
            i++;
            hi = grammar_char(body, i);
        }
        if (!is_class && lo == 0) return true;
        if (is_class && !(lo == 0 && hi == 0)) only_nul = false;
    }
    return only_nul;
}

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

struct scanner {
    std::string_view       s;
    const grammar_limits & lim;
    size_t                 pos  = 0;
    size_t                 line = 1;
    std::string            error;

    std::map<std::string, size_t, std::less<>> ids;
    std::vector<terms>                         rule_terms;  // by rule id
    std::vector<bool>                          defined;
    size_t                                     n_defined = 0;
    uint64_t                                   expansion = 0;

    bool fail(std::string what) {
        if (error.empty()) error = "grammar: " + what + " (line " + std::to_string(line) + ")";
        return false;
    }

    size_t rule_id(std::string_view name) {
        auto it = ids.find(name);
        if (it != ids.end()) return it->second;
        const size_t id = rule_terms.size();
        ids.emplace(std::string(name), id);
        rule_terms.emplace_back();
        defined.push_back(false);
        return id;
    }

    // Skips a quoted literal, a [class] or a <token> starting at pos (the opening char).
    void skip_delimited(char close) {
        pos++;
        while (pos < s.size() && s[pos] != close && s[pos] != '\n') {
            pos += s[pos] == '\\' ? 2 : 1;
        }
        if (pos < s.size() && s[pos] == close) pos++;
    }

    uint64_t read_int() {
        uint64_t v = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
            v = std::min<uint64_t>(v * 10 + (uint64_t) (s[pos] - '0'), UINT64_MAX / 20);
            pos++;
        }
        return v;
    }

    void skip_blanks() {
        while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\r')) pos++;
    }

    // After an element: its repetition, if any, as the factor it multiplies stacks by. False on a
    // bound crossed.
    bool repetition(uint64_t & factor) {
        factor = 1;
        skip_blanks();
        if (pos >= s.size()) return true;
        if (s[pos] == '*' || s[pos] == '+' || s[pos] == '?') {
            pos++;
            return true;  // one recursive rule: no copies
        }
        if (s[pos] != '{') return true;
        const size_t open = pos;
        pos++;
        skip_blanks();
        const uint64_t m = read_int();
        skip_blanks();
        uint64_t n = m;
        bool bounded = true;
        if (pos < s.size() && s[pos] == ',') {
            pos++;
            skip_blanks();
            if (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
                n = read_int();
            } else {
                bounded = false;
            }
            skip_blanks();
        }
        if (pos < s.size() && s[pos] == '}') pos++;
        // As written (a count past 64 bits is clamped above, not shown so).
        const std::string written(s.substr(open, std::min<size_t>(pos - open, 60)));
        if (bounded && m > n) return fail("repetition " + written + " has its minimum above its maximum");
        if (m > lim.max_repetition) {
            return fail("repetition " + written + " exceeds the limit of " + std::to_string(lim.max_repetition) + " repetitions");
        }
        // llama.cpp turns a maximum over its bound into "no maximum" (one recursive rule).
        const uint64_t copies = bounded && n <= lim.max_repetition ? n : m;
        expansion += std::max<uint64_t>(copies, 1);
        if (expansion > lim.max_expansion) {
            return fail("repetitions expand into more than " + std::to_string(lim.max_expansion) + " rules");
        }
        factor = std::max<uint64_t>(copies, 1);
        return true;
    }

    // One rule's body, from after "::=" to the newline that ends it at nesting level 0.
    bool body(size_t id) {
        std::vector<terms> stack(1);  // groups being read; [0] is the rule itself
        while (pos < s.size()) {
            const char c = s[pos];
            if (c == '\n') {
                line++;
                if (stack.size() == 1) {
                    pos++;
                    break;
                }
                pos++;
                continue;
            }
            if (c == '#') {
                while (pos < s.size() && s[pos] != '\n') pos++;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\r' || c == '|') {
                pos++;
                continue;
            }
            terms el;
            if (c == '(') {
                if (stack.size() > lim.max_depth) {
                    return fail("parentheses nested deeper than the limit of " + std::to_string(lim.max_depth));
                }
                stack.emplace_back();
                pos++;
                continue;
            }
            if (c == ')') {
                pos++;
                if (stack.size() == 1) continue;  // unbalanced: llama.cpp says so
                el = std::move(stack.back());
                stack.pop_back();
                if (el.constant == 0 && el.refs.empty()) el.constant = 1;
            } else if (c == '"' || c == '[') {
                const size_t start = pos + 1;
                skip_delimited(c == '"' ? '"' : ']');
                const size_t end = pos > start && pos <= s.size() && s[pos - 1] == (c == '"' ? '"' : ']') ? pos - 1 : pos;
                if (needs_nul(s.substr(start, end - start), c == '[')) {
                    return fail("a NUL character (\\x00) can never be generated: llama.cpp matches a token's text up to its first NUL");
                }
                el.constant = 1;
            } else if (c == '<') {
                skip_delimited('>');
                el.constant = 1;
            } else if (c == '.') {
                pos++;
                el.constant = 1;
            } else if (is_name_char(c)) {
                const size_t start = pos;
                while (pos < s.size() && is_name_char(s[pos])) pos++;
                el.refs[rule_id(s.substr(start, pos - start))] = 1;
            } else {
                pos++;  // not GBNF: llama.cpp reports it
                continue;
            }
            uint64_t factor = 1;
            if (!repetition(factor)) return false;
            el.scale(factor, lim.max_product);
            stack.back().merge(el);
        }
        while (stack.size() > 1) {  // unclosed groups: count them anyway
            terms el = std::move(stack.back());
            stack.pop_back();
            stack.back().merge(el);
        }
        rule_terms[id].merge(stack[0]);
        return true;
    }

    bool rules() {
        while (pos < s.size()) {
            const char c = s[pos];
            if (c == '\n') {
                line++;
                pos++;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\r') {
                pos++;
                continue;
            }
            if (c == '#') {
                while (pos < s.size() && s[pos] != '\n') pos++;
                continue;
            }
            const size_t start = pos;
            while (pos < s.size() && is_name_char(s[pos])) pos++;
            if (pos == start) return true;  // not a rule: llama.cpp reports the syntax error
            const size_t id = rule_id(s.substr(start, pos - start));
            skip_blanks();
            if (s.substr(pos, 3) != "::=") return true;
            pos += 3;
            if (!defined[id]) {
                defined[id] = true;
                if (++n_defined > lim.max_rules) {
                    return fail("more than " + std::to_string(lim.max_rules) + " rules");
                }
            }
            if (!body(id)) return false;
        }
        return true;
    }

    // The largest product of nested repetitions below each rule, through references; a reference
    // back into a rule being computed (recursion) counts as 1, as llama.cpp expands it lazily.
    bool products() {
        const uint64_t cap = lim.max_product;
        std::vector<uint64_t> weight(rule_terms.size(), 0);
        std::vector<uint8_t>  state(rule_terms.size(), 0);  // 0 new, 1 in progress, 2 done
        for (size_t root = 0; root < rule_terms.size(); root++) {
            if (state[root] != 0) continue;
            std::vector<std::pair<size_t, std::map<size_t, uint64_t>::const_iterator>> todo;
            todo.emplace_back(root, rule_terms[root].refs.begin());
            state[root] = 1;
            while (!todo.empty()) {
                auto & [id, it] = todo.back();
                if (it != rule_terms[id].refs.end()) {
                    const size_t next = it->first;
                    if (state[next] == 0) {
                        state[next] = 1;
                        todo.emplace_back(next, rule_terms[next].refs.begin());
                        continue;
                    }
                    ++it;
                    continue;
                }
                uint64_t w = std::max<uint64_t>(rule_terms[id].constant, 1);
                for (const auto & [ref, factor] : rule_terms[id].refs) {
                    const uint64_t inner = state[ref] == 2 ? weight[ref] : 1;
                    w = std::max(w, sat_mul(factor, inner, cap));
                }
                weight[id] = w;
                state[id]  = 2;
                todo.pop_back();
                if (w > cap) {
                    std::string name;
                    for (const auto & kv : ids) {
                        if (kv.second == id) name = kv.first;
                    }
                    line = 0;
                    error = "grammar: nested repetitions in rule '" + name + "' allow more than " + std::to_string(cap) +
                            " ways to continue (the product of their maximum counts; reduce the counts or the nesting)";
                    return false;
                }
            }
        }
        return true;
    }
};

}  // namespace

std::string grammar_check(std::string_view gbnf, const grammar_limits & limits) {
    if (gbnf.size() > limits.max_bytes) {
        return "grammar: " + std::to_string(gbnf.size()) + " bytes exceed the limit of " + std::to_string(limits.max_bytes);
    }
    if (gbnf.substr(0, 11) == "%llguidance") {
        return "grammar: llguidance grammars are not supported (this build reads GBNF only)";
    }
    scanner sc{ gbnf, limits };
    if (!sc.rules() || !sc.products()) return sc.error;
    return "";
}

}  // namespace bmoe
