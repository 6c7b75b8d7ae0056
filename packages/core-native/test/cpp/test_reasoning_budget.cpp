// The reasoning budget read on the text (reasoning_budget.h): tags found whatever tokens spell
// them, only generated tokens counted, the end written at a character boundary.
#include "check.h"

#include "bmoe/runtime/reasoning_budget.h"

#include <string>
#include <vector>

using namespace bmoe;

static reasoning_budget qwen(int32_t budget) {
    return reasoning_budget_make("<think>", { "</think>" }, budget, "");
}

static void feed(reasoning_budget & rb, const std::vector<std::string> & pieces) {
    for (const auto & p : pieces) reasoning_budget_accept(rb, p);
}

static void test_prefill_counts_generated_tokens_only() {
    auto rb = qwen(2);
    reasoning_budget_prefill(rb, "<|im_start|>assistant\n<think>\n");
    CHECK(rb.state == reasoning_budget::counting);
    feed(rb, { " a" });
    CHECK(rb.state == reasoning_budget::counting);
    feed(rb, { " b" });
    CHECK(reasoning_budget_must_end(rb));
    feed(rb, { "</think>" });
    CHECK(rb.state == reasoning_budget::done);
    auto zero = qwen(0);
    reasoning_budget_prefill(zero, "<|im_start|>assistant\n<think>\n");
    CHECK(reasoning_budget_must_end(zero));
    auto closed = qwen(0);
    reasoning_budget_prefill(closed, "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    CHECK(closed.state == reasoning_budget::done);
}

static void test_tags_spelled_in_pieces() {
    auto rb = qwen(3);
    reasoning_budget_prefill(rb, "<|im_start|>assistant\n");
    CHECK(rb.state == reasoning_budget::idle);
    feed(rb, { "<", "th", "ink", ">" });
    CHECK(rb.state == reasoning_budget::counting);
    feed(rb, { "x", "y" });
    CHECK(rb.state == reasoning_budget::counting);
    feed(rb, { "</", "think", ">" });  // a natural end, spelled out
    CHECK(rb.state == reasoning_budget::done);
    feed(rb, { "<think>" });           // a new block re-arms the budget
    CHECK(rb.state == reasoning_budget::counting && rb.remaining == 3);
}

static void test_end_waits_for_a_whole_character() {
    auto rb = qwen(1);
    reasoning_budget_prefill(rb, "<think>");
    feed(rb, { "\xE2\x86" });  // the first two bytes of →
    CHECK(rb.state == reasoning_budget::counting);
    feed(rb, { "\x92" });
    CHECK(reasoning_budget_must_end(rb));
}

static void test_unlimited_and_message() {
    auto rb = qwen(-1);
    reasoning_budget_prefill(rb, "<think>");
    for (int i = 0; i < 1000; i++) reasoning_budget_accept(rb, "w");
    CHECK(!reasoning_budget_must_end(rb));
    auto m = reasoning_budget_make("<|channel|>analysis<|message|>", { "<|end|>" }, 4, " [budget]");
    CHECK(m.forced_text == " [budget]<|end|>");
}

static void test_long_reasoning_stays_bounded() {
    auto rb = qwen(100000);
    reasoning_budget_prefill(rb, "<think>");
    for (int i = 0; i < 20000; i++) reasoning_budget_accept(rb, "word ");
    CHECK(rb.text.size() < 200);
    feed(rb, { "</thi", "nk>" });
    CHECK(rb.state == reasoning_budget::done);
}

int main() {
    test_prefill_counts_generated_tokens_only();
    test_tags_spelled_in_pieces();
    test_end_waits_for_a_whole_character();
    test_unlimited_and_message();
    test_long_reasoning_stays_bounded();
    return check_report("reasoning_budget");
}
