// Bounds on GBNF grammars, checked before llama.cpp parses them (issue 28's crashes and hangs).
#include "check.h"

#include "bmoe/limits/grammar_limits.h"

#include <string>

using namespace bmoe;

static bool refused(const std::string & g, const char * needle) {
    const std::string e = grammar_check(g);
    if (e.find(needle) == std::string::npos) {
        std::fprintf(stderr, "  grammar_check gave: '%s' (wanted '%s')\n", e.c_str(), needle);
        return false;
    }
    return e.find('\n') == std::string::npos && e.size() < 300;  // one short line
}

static void test_real_grammars_pass() {
    CHECK(grammar_check("root ::= \"yes\" | \"no\"").empty());
    CHECK(grammar_check("root ::= item{0,10}\nitem ::= [a-z]{1,20} \",\"\n").empty());  // 10 x 20 = 200
    CHECK(grammar_check("root ::= value\nvalue ::= object | array | [0-9]+\nobject ::= \"{\" (value (\",\" value)*)? \"}\"\n"
                        "array ::= \"[\" value* \"]\"\n").empty());  // recursion is not multiplied
    CHECK(grammar_check("# a comment (with a paren\nroot ::= (\"a\" | \"b\")* \"\\\"(\" [)(]\n").empty());
    CHECK(grammar_check("root ::= ( \"a\"\n  | \"b\" )\n").empty());  // newline inside a group
    CHECK(grammar_check("root ::= <[1000]> <|im_end|> .").empty());
    CHECK(grammar_check("root ::= \"x\"{2000}").empty());  // llama.cpp's own bound is allowed
}

static void test_bounds() {
    CHECK(refused("root ::= \"a\"{5,1}", "{5,1} has its minimum above its maximum"));
    CHECK(refused("root ::= \"a\"{2001}", "exceeds the limit of 2000 repetitions"));
    CHECK(refused("root ::= r1{0,1999}\nr1 ::= \"a\"{0,1999}\n", "nested repetitions in rule 'root'"));
    CHECK(refused("root ::= ((\"a\"{0,1999}){0,1999}){0,1999}", "nested repetitions in rule 'root'"));
    CHECK(refused("root ::= r1{0,400}\nr1 ::= \"a\"{0,400}\n", "more than 10000 ways"));
    CHECK(grammar_check("root ::= r1{0,99}\nr1 ::= \"a\"{0,100}\n").empty());  // 9,900 ways
    // Through a chain of references the factors multiply too.
    CHECK(refused("root ::= a{0,30}\na ::= b{0,30}\nb ::= c{0,30}\nc ::= \"x\"\n", "in rule 'root'"));
    CHECK(refused("root ::= " + std::string(20000, '(') + "\"a\"" + std::string(20000, ')'), "parentheses nested deeper than the limit of 100 (line 1)"));
    std::string many;
    for (int i = 0; i < 10001; i++) many += "r" + std::to_string(i) + " ::= \"a\"\n";
    CHECK(refused(many, "more than 10000 rules"));
    CHECK(refused(std::string((1u << 20) + 1, ' '), "exceed the limit of 1048576"));
    CHECK(refused("%llguidance {}\nstart: \"a\"", "llguidance grammars are not supported"));
    std::string wide = "root ::= ";
    for (int i = 0; i < 60; i++) wide += "\"a\"{0,2000} ";
    CHECK(refused(wide, "expand into more than 100000 rules"));
    CHECK(refused("root ::= \"a\"\nx ::= \"b\"\nroot2 ::= \"c\"{9,3}\n", "(line 3)"));
}

static void test_recursion_counts_once() {
    // A rule that references itself through a repetition: lazily expanded by llama.cpp.
    CHECK(grammar_check("root ::= \"(\" root{0,50} \")\" | \"x\"").empty());
    CHECK(grammar_check("a ::= b{0,50}\nb ::= a{0,50} | \"x\"\nroot ::= a\n").empty());  // 50 x 50: the cycle counts once
}

// llama.cpp matches token text up to its first NUL: an element only a NUL can meet admits no token,
// and its sampler then failed mid-generation ("Unexpected empty grammar stack"; a 500 from serve).
static void test_nul_only_elements() {
    const char * why = "a NUL character (\\x00) can never be generated";
    CHECK(refused("root ::= \"\\x00\"", why));
    CHECK(refused("root ::= \"a\" \"\\u0000\"", why));
    CHECK(refused("root ::= \"ab\\U00000000c\"", why));
    CHECK(refused("root ::= [\\x00]", why));
    CHECK(refused("root ::= [\\x00-\\x00]", why));
    CHECK(refused("root ::= \"a\"\nb ::= \"\\x00\"\n", "(line 2)"));
    CHECK(refused(std::string("root ::= \"a") + '\0' + "\"", why));  // the byte itself
    // Classes that hold other characters too, negated ones (JSON strings), escaped backslashes.
    CHECK(grammar_check("root ::= [\\x00-\\x20]").empty());
    CHECK(grammar_check("root ::= [^\"\\\\\\x7F\\x00-\\x1F]*").empty());
    CHECK(grammar_check("root ::= [\\x00a]").empty());
    CHECK(grammar_check("root ::= \"\\\\x00\" \"\\\\u0000\"").empty());  // a backslash, then \"x00\"
    CHECK(grammar_check("root ::= \"\\x01\\x10\\u0100\"").empty());
}

int main() {
    test_real_grammars_pass();
    test_bounds();
    test_recursion_counts_once();
    test_nul_only_elements();
    return check_report("grammar_limits");
}
