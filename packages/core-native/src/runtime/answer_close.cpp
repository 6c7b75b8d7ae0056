// Closing a forced answer within max_tokens (see the header). The grammar's state is llama.cpp's
// own (src/llama-grammar.h: the rules and the pushdown stacks its sampler keeps); what is added
// is the shortest way out of a state, computed on its rules.
#include "bmoe/runtime/answer_close.h"

#include "common.h"
#include "llama-grammar.h"  // llama.cpp's src/: rules and stacks (its own tests read them too)

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace bmoe {

namespace {

constexpr size_t unreachable = SIZE_MAX / 4;

size_t sat_add(size_t a, size_t b) { return std::min(unreachable, a + b); }

bool is_end(const llama_grammar_element * p) { return p->type == LLAMA_GRETYPE_END || p->type == LLAMA_GRETYPE_ALT; }

// The element after a character class ([a-z0-9], [^"\\]): its range ends and alternatives.
const llama_grammar_element * after_char(const llama_grammar_element * p) {
    p++;
    while (p->type == LLAMA_GRETYPE_CHAR_RNG_UPPER || p->type == LLAMA_GRETYPE_CHAR_ALT) p++;
    return p;
}

void append_utf8(std::string & out, uint32_t cp) {
    if (cp < 0x80) {
        out += (char) cp;
    } else if (cp < 0x800) {
        out += (char) (0xC0 | (cp >> 6));
        out += (char) (0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char) (0xE0 | (cp >> 12));
        out += (char) (0x80 | ((cp >> 6) & 0x3F));
        out += (char) (0x80 | (cp & 0x3F));
    } else {
        out += (char) (0xF0 | (cp >> 18));
        out += (char) (0x80 | ((cp >> 12) & 0x3F));
        out += (char) (0x80 | ((cp >> 6) & 0x3F));
        out += (char) (0x80 | (cp & 0x3F));
    }
}

// The ranges of the class at `p`: CHAR|CHAR_NOT v [RNG_UPPER u] (CHAR_ALT v [RNG_UPPER u])*.
std::vector<std::pair<uint32_t, uint32_t>> class_ranges(const llama_grammar_element * p) {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    const llama_grammar_element * q = p;
    while (true) {
        uint32_t lo = q->value, hi = q->value;
        q++;
        if (q->type == LLAMA_GRETYPE_CHAR_RNG_UPPER) hi = (q++)->value;
        ranges.emplace_back(lo, hi);
        if (q->type != LLAMA_GRETYPE_CHAR_ALT) break;
    }
    return ranges;
}

// A character the class at `p` matches: its first character, or for [^...] a plain one it
// does not exclude.
bool class_char(const llama_grammar_element * p, uint32_t & cp) {
    if (p->type == LLAMA_GRETYPE_CHAR) {
        cp = p->value;
        return true;
    }
    if (p->type == LLAMA_GRETYPE_CHAR_ANY) {
        cp = 'a';
        return true;
    }
    const std::vector<std::pair<uint32_t, uint32_t>> excluded = class_ranges(p);
    static const char * const preferred = "aex0 A_";
    auto allowed = [&](uint32_t c) {
        for (const auto & [lo, hi] : excluded) if (c >= lo && c <= hi) return false;
        return true;
    };
    for (const char * c = preferred; *c; c++) {
        if (allowed((uint32_t) *c)) { cp = (uint32_t) *c; return true; }
    }
    for (uint32_t c = 0x21; c < 0x7F; c++) {
        if (allowed(c)) { cp = c; return true; }
    }
    return false;
}

// The shortest derivation of every rule: its length in characters, and the round of the
// (Jacobi) fixpoint in which it was last lowered. An alternative that reaches a rule's length
// through rules of earlier rounds only always exists, so writing it out terminates.
struct shortest_rules {
    const llama_grammar_rules & rules;
    std::vector<size_t>         len;
    std::vector<size_t>         round;

    explicit shortest_rules(const llama_grammar_rules & r) : rules(r), len(r.size(), unreachable), round(r.size(), 0) {
        for (size_t k = 1; k <= rules.size() + 1; k++) {
            std::vector<size_t> next = len;
            bool changed = false;
            for (size_t i = 0; i < rules.size(); i++) {
                size_t best = unreachable;
                for_each_alt(i, [&](const llama_grammar_element * a) { best = std::min(best, seq_len(a)); });
                if (best < next[i]) {
                    next[i]  = best;
                    round[i] = k;
                    changed  = true;
                }
            }
            len.swap(next);
            if (!changed) break;
        }
    }

    template <typename F> void for_each_alt(size_t rule, F && f) const {
        if (rule >= rules.size() || rules[rule].empty()) return;
        const llama_grammar_element * p = rules[rule].data();
        while (true) {
            f(p);
            while (!is_end(p)) p++;
            if (p->type == LLAMA_GRETYPE_END) break;
            p++;
        }
    }

    // The rest of a sequence from `p`: characters, and rules at their shortest. Token elements
    // cannot be written as text: unreachable.
    size_t seq_len(const llama_grammar_element * p) const {
        size_t n = 0;
        while (!is_end(p) && n < unreachable) {
            switch (p->type) {
                case LLAMA_GRETYPE_RULE_REF:
                    n = sat_add(n, p->value < len.size() ? len[p->value] : unreachable);
                    p++;
                    break;
                case LLAMA_GRETYPE_CHAR:
                case LLAMA_GRETYPE_CHAR_NOT:
                    n = sat_add(n, 1);
                    p = after_char(p);
                    break;
                case LLAMA_GRETYPE_CHAR_ANY:
                    n = sat_add(n, 1);
                    p++;
                    break;
                default:
                    return unreachable;
            }
        }
        return n;
    }

    bool write_seq(const llama_grammar_element * p, std::string & out) const {
        while (!is_end(p)) {
            if (p->type == LLAMA_GRETYPE_RULE_REF) {
                if (!write_rule(p->value, out)) return false;
                p++;
                continue;
            }
            uint32_t cp = 0;
            if (!class_char(p, cp)) return false;
            append_utf8(out, cp);
            p = p->type == LLAMA_GRETYPE_CHAR_ANY ? p + 1 : after_char(p);
        }
        return true;
    }

    bool write_rule(uint32_t rule, std::string & out) const {
        if (rule >= len.size() || len[rule] >= unreachable) return false;
        const llama_grammar_element * chosen = nullptr;
        for_each_alt(rule, [&](const llama_grammar_element * a) {
            if (chosen || seq_len(a) != len[rule]) return;
            for (const llama_grammar_element * q = a; !is_end(q); q++) {
                if (q->type == LLAMA_GRETYPE_RULE_REF && round[q->value] >= round[rule]) return;
            }
            chosen = a;
        });
        return chosen && write_seq(chosen, out);
    }
};

// A code point that the class at `p` matches within [lo, hi] (a partial UTF-8 character's range).
bool class_char_in(const llama_grammar_element * p, uint32_t lo, uint32_t hi, uint32_t & cp) {
    if (p->type == LLAMA_GRETYPE_CHAR_ANY) {
        cp = lo;
        return true;
    }
    const bool negated = p->type == LLAMA_GRETYPE_CHAR_NOT;
    const std::vector<std::pair<uint32_t, uint32_t>> ranges = class_ranges(p);
    if (!negated) {
        for (const auto & [a, b] : ranges) {
            if (b >= lo && a <= hi) {
                cp = std::max(a, lo);
                return true;
            }
        }
        return false;
    }
    for (uint32_t c = lo; c <= hi && c - lo < 4096; c++) {
        bool excluded = false;
        for (const auto & [a, b] : ranges) excluded = excluded || (c >= a && c <= b);
        if (!excluded) {
            cp = c;
            return true;
        }
    }
    return false;
}

bool shortest_completion(const shortest_rules & sr, llama_grammar & g, std::string & out);

// A token ended inside a multi-byte character: the grammar has not seen it yet. Its remaining
// bytes come first, for a character the grammar takes (the first such of the first state that has
// one), then the completion from the state after it.
bool finish_partial_char(const shortest_rules & sr, llama_grammar & g, std::string & out) {
    const int      n  = g.partial_utf8.n_remain;
    const uint32_t lo = g.partial_utf8.value << (6 * n);
    const uint32_t hi = lo | ((1u << (6 * n)) - 1);
    uint32_t cp = 0;
    bool found = false;
    for (const auto & stack : g.stacks) {
        if (!stack.empty() && (found = class_char_in(stack.back(), lo, hi, cp))) break;
    }
    if (!found) return false;
    const llama_grammar_stacks saved_stacks = g.stacks;
    const llama_partial_utf8   saved_utf8   = g.partial_utf8;
    llama_grammar_accept(&g, cp);
    g.partial_utf8 = { 0, 0 };
    std::string rest;
    const bool ok = !g.stacks.empty() && shortest_completion(sr, g, rest);
    g.stacks       = saved_stacks;
    g.partial_utf8 = saved_utf8;
    if (!ok) return false;
    out.clear();
    for (int i = n - 1; i >= 0; i--) out += (char) (0x80 | ((cp >> (6 * i)) & 0x3F));
    out += rest;
    return true;
}

bool shortest_completion(const shortest_rules & sr, llama_grammar & g, std::string & out) {
    if (g.partial_utf8.n_remain < 0 || g.stacks.empty()) return false;
    if (g.partial_utf8.n_remain > 0) return finish_partial_char(sr, g, out);
    const llama_grammar_stack * best = nullptr;
    size_t best_len = unreachable;
    for (const auto & stack : g.stacks) {
        size_t n = 0;
        for (const llama_grammar_element * e : stack) n = sat_add(n, sr.seq_len(e));
        if (n < best_len) {
            best_len = n;
            best     = &stack;
        }
    }
    if (!best) return false;
    out.clear();
    for (auto it = best->rbegin(); it != best->rend(); ++it) {
        if (!sr.write_seq(*it, out)) return false;
    }
    return true;
}

}  // namespace

bool grammar_shortest_completion(llama_grammar & g, std::string & out) {
    const shortest_rules sr(g.rules);
    return shortest_completion(sr, g, out);
}

struct answer_close {
    const llama_vocab *             vocab = nullptr;
    llama_grammar *                 g     = nullptr;
    std::unique_ptr<shortest_rules> sr;
    llama_token                     eog   = LLAMA_TOKEN_NULL;
    bool                            broken = false;    // the copy lost track of the sampler's grammar
    std::vector<llama_token>        closing;           // the completion being written
    size_t                          at = 0;
    std::unordered_map<std::string, llama_token> pieces;  // built only if a tokenization does not replay

    ~answer_close() {
        if (g) llama_grammar_free_impl(g);
    }
};

void answer_close_deleter::operator()(answer_close * a) const { delete a; }

namespace {

// Feeds tokens to the grammar; restores its state and returns false if one is refused.
bool replays(llama_grammar & g, const std::vector<llama_token> & tokens, bool keep) {
    const llama_grammar_stacks saved_stacks = g.stacks;
    const llama_partial_utf8   saved_utf8   = g.partial_utf8;
    bool ok = true;
    try {
        for (llama_token t : tokens) llama_grammar_accept_impl(g, t);
    } catch (const std::exception &) {
        ok = false;
    }
    if (!ok || !keep) {
        g.stacks       = saved_stacks;
        g.partial_utf8 = saved_utf8;
    }
    return ok;
}

bool complete(const llama_grammar & g) {
    for (const auto & s : g.stacks) if (s.empty()) return true;
    return false;
}

// The text as tokens the grammar takes one by one: the tokenizer's, or else the longest pieces
// of the vocabulary, each checked.
bool completion_tokens(answer_close & a, const std::string & text, std::vector<llama_token> & out) {
    out = common_tokenize(a.vocab, text, false, true);
    if (replays(*a.g, out, false)) return true;
    if (a.pieces.empty()) {
        const int32_t n = llama_vocab_n_tokens(a.vocab);
        for (llama_token t = 0; t < n; t++) {
            if (llama_vocab_is_eog(a.vocab, t)) continue;
            std::string p = common_token_to_piece(a.vocab, t, true);
            if (!p.empty()) a.pieces.emplace(std::move(p), t);
        }
    }
    out.clear();
    const llama_grammar_stacks saved_stacks = a.g->stacks;
    const llama_partial_utf8   saved_utf8   = a.g->partial_utf8;
    bool ok = true;
    for (size_t pos = 0; pos < text.size() && ok;) {
        ok = false;
        for (size_t n = std::min<size_t>(text.size() - pos, 64); n > 0; n--) {
            auto it = a.pieces.find(text.substr(pos, n));
            if (it == a.pieces.end() || !replays(*a.g, { it->second }, true)) continue;
            out.push_back(it->second);
            pos += n;
            ok = true;
            break;
        }
    }
    a.g->stacks       = saved_stacks;
    a.g->partial_utf8 = saved_utf8;
    return ok;
}

// The tokens that end the answer from the grammar's current state, its end of generation last.
bool plan(answer_close & a, std::vector<llama_token> & out) {
    if (a.broken || a.eog == LLAMA_TOKEN_NULL) return false;
    std::string text;
    if (!shortest_completion(*a.sr, *a.g, text)) return false;
    if (!text.empty() && !completion_tokens(a, text, out)) return false;
    if (text.empty()) {
        out.clear();
        if (!complete(*a.g)) return false;
    }
    out.push_back(a.eog);
    return true;
}

}  // namespace

answer_close_ptr answer_close_init(const llama_vocab * vocab, const std::string & gbnf, const std::string & generation_prompt, bool prefill) {
    answer_close_ptr a(new answer_close);
    a->vocab = vocab;
    a->g     = llama_grammar_init_impl(vocab, gbnf.c_str(), "root", false, nullptr, 0, nullptr, 0);
    if (!a->g) throw std::runtime_error("grammar: llama.cpp cannot use it");
    a->sr = std::make_unique<shortest_rules>(a->g->rules);
    // Any end of generation the model has ends the answer once the grammar is complete.
    for (llama_token t : { llama_vocab_eot(vocab), llama_vocab_eos(vocab) }) {
        if (t != LLAMA_TOKEN_NULL && llama_vocab_is_eog(vocab, t)) {
            a->eog = t;
            break;
        }
    }
    if (prefill && !generation_prompt.empty()) {
        // As common_sampler_init prefills its grammar (common/sampling.cpp): the generation
        // prompt's tokens, without a leading space some tokenizers put before a special token.
        const auto tokens = common_tokenize(vocab, generation_prompt, false, true);
        for (size_t i = 0; i < tokens.size(); i++) {
            const std::string piece = common_token_to_piece(vocab, tokens[i], true);
            if (i == 0 && !piece.empty() && std::isspace((unsigned char) piece[0]) && !std::isspace((unsigned char) generation_prompt[0])) continue;
            try {
                llama_grammar_accept_impl(*a->g, tokens[i]);
            } catch (const std::exception &) {
                a->broken = true;  // common_sampler refuses this grammar the same way, and says so
                break;
            }
        }
    }
    return a;
}

llama_token answer_close_forced(answer_close & a, int32_t left) {
    if (!a.closing.empty()) return a.at < a.closing.size() ? a.closing[a.at] : LLAMA_TOKEN_NULL;
    std::vector<llama_token> tokens;
    if (!plan(a, tokens) || (int32_t) tokens.size() < left) return LLAMA_TOKEN_NULL;
    a.closing = std::move(tokens);
    a.at      = 0;
    return a.closing[0];
}

bool answer_close_keeps(answer_close & a, llama_token t, int32_t left) {
    if (a.broken || !a.closing.empty() || llama_vocab_is_eog(a.vocab, t)) return true;
    const llama_grammar_stacks saved_stacks = a.g->stacks;
    const llama_partial_utf8   saved_utf8   = a.g->partial_utf8;
    if (!replays(*a.g, { t }, true)) return true;  // not ours to judge: the sampler's grammar took it
    std::vector<llama_token> after;
    const bool fits = !plan(a, after) || (int32_t) after.size() <= left - 1;
    a.g->stacks       = saved_stacks;  // the caller accepts what it writes
    a.g->partial_utf8 = saved_utf8;
    return fits;
}

bool answer_close_takes(answer_close & a, llama_token t) {
    if (a.broken) return true;
    if (llama_vocab_is_eog(a.vocab, t)) return complete(*a.g);
    return replays(*a.g, { t }, false);
}

void answer_close_accept(answer_close & a, llama_token t) {
    if (!a.closing.empty() && a.at < a.closing.size() && a.closing[a.at] == t) a.at++;
    if (a.broken || llama_vocab_is_eog(a.vocab, t)) return;
    if (!replays(*a.g, { t }, true)) a.broken = true;
}

}  // namespace bmoe
