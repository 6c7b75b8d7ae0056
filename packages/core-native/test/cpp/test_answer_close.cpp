// The shortest completion of a grammar state (answer_close.h): from any state a random walk
// reaches, the completion is accepted and ends the grammar, and it is the shortest there is.
// llama.cpp's grammar engine without a vocabulary (as its own grammar tests run it).
#include "check.h"

#include "bmoe/runtime/answer_close.h"

#include "json-schema-to-grammar.h"
#include "llama-grammar.h"
#include "json.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace bmoe;

namespace {

struct grammar_ptr {
    llama_grammar * g;
    explicit grammar_ptr(const std::string & gbnf) : g(llama_grammar_init_impl(nullptr, gbnf.c_str(), "root", false, nullptr, 0, nullptr, 0)) {}
    ~grammar_ptr() { if (g) llama_grammar_free_impl(g); }
};

bool accepts(llama_grammar & g, const std::string & text) {
    const auto stacks = g.stacks;
    const auto utf8   = g.partial_utf8;
    try {
        llama_grammar_accept_str(g, text);
        return true;
    } catch (const std::exception &) {
        g.stacks       = stacks;
        g.partial_utf8 = utf8;
        return false;
    }
}

bool complete(const llama_grammar & g) {
    for (const auto & s : g.stacks) if (s.empty()) return true;
    return false;
}

// Completes from the current state, then checks the completion is taken and ends the grammar.
bool closes(llama_grammar & g, std::string * out = nullptr) {
    std::string c;
    if (!grammar_shortest_completion(g, c)) return false;
    const auto stacks = g.stacks;
    const auto utf8   = g.partial_utf8;
    const bool ok = accepts(g, c) && complete(g);
    g.stacks       = stacks;
    g.partial_utf8 = utf8;
    if (out) *out = c;
    return ok;
}

std::string completion_after(const std::string & gbnf, const std::string & prefix) {
    grammar_ptr gp(gbnf);
    if (!gp.g || !accepts(*gp.g, prefix)) return "<prefix refused>";
    std::string c;
    if (!closes(*gp.g, &c)) return "<does not close>";
    return c;
}

void test_shortest() {
    CHECK(completion_after("root ::= \"a\" (\"b\" | \"cd\")", "") == "ab");
    CHECK(completion_after("root ::= \"a\" (\"b\" | \"cd\")", "ac") == "d");
    CHECK(completion_after("root ::= \"x\"*", "xxx").empty());
    CHECK(completion_after("root ::= [1-9] [0-9]*", "") == "1");
    // A string closes at once; a character class outside it gives a character it admits.
    CHECK(completion_after("root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"", "\"abc") == "\"");
    CHECK(completion_after("root ::= [^:}]+ \":\"", "") == "a:");
    CHECK(completion_after("root ::= [^a-z]+", "") == "0");
    // Recursion: the shortest way out is the terminating alternative.
    CHECK(completion_after("root ::= \"(\" root \")\" | \"x\"", "((") == "x))");
    CHECK(completion_after("root ::= item item\nitem ::= \"[\" item* \"]\"", "[[") == "]][]");
    // Repetition bounds count: {2,} needs two.
    CHECK(completion_after("root ::= \"y\"{2,} \"!\"", "") == "yy!");
    // Non-ASCII literals are written as UTF-8.
    CHECK(completion_after("root ::= \"é\" \"→\"", "") == "é→");
    // A token that ended inside a character: its remaining bytes come first.
    CHECK(completion_after("root ::= \"é\" \"x\"", "\xC3") == "\xA9x");
    CHECK(completion_after("root ::= [à-ÿ] \"!\"", "\xC3") == "\xA0!");
    CHECK(completion_after("root ::= [^a] \"!\"", "\xE2\x86") == "\x80!");
}

// A random walk over printable characters: every state reached closes.
void walk(const std::string & gbnf, uint32_t seed, int steps) {
    grammar_ptr gp(gbnf);
    CHECK(gp.g != nullptr);
    if (!gp.g) return;
    std::mt19937 rng(seed);
    std::string alphabet = "{}[]\":,0123456789-.eE+ \nabcxyz\\tfnrulse_";
    int moves = 0;
    for (int i = 0; i < steps; i++) {
        CHECK(closes(*gp.g));
        std::shuffle(alphabet.begin(), alphabet.end(), rng);
        bool moved = false;
        for (size_t k = 0; k < alphabet.size() && !moved; k++) moved = accepts(*gp.g, std::string(1, alphabet[k]));
        if (!moved) break;
        moves++;
    }
    CHECK(moves > 0);
}

void test_random_states() {
    const std::vector<std::string> schemas = {
        R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})",
        R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"number"}},"c":{"enum":["x","y"]}},"required":["a","b","c"]})",
        R"({"type":"object"})",
        R"({"type":"array","items":{"type":"object","properties":{"n":{"type":"boolean"}},"required":["n"]},"minItems":2})",
        R"({"anyOf":[{"type":"string","minLength":3},{"type":"null"}]})",
    };
    uint32_t seed = 1;
    for (const auto & s : schemas) {
        const std::string gbnf = json_schema_to_grammar(common_json::parse(s));
        for (int k = 0; k < 8; k++) walk(gbnf, seed++, 200);
    }
}

}  // namespace

int main() {
    test_shortest();
    test_random_states();
    return check_report("answer_close");
}
