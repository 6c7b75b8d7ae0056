// Route-ahead's selection rule: the k best experts as llama.cpp's MoE routing picks them.
#include "check.h"

#include "bmoe/stream/route_select.h"

using namespace bmoe;

static void test_top_k_by_logit() {
    const std::vector<float> logits = { 0.1f, 2.0f, -1.0f, 3.0f, 2.0f };
    CHECK((route_select(logits, {}, route_gating::softmax, 3) == std::vector<int32_t>{ 3, 1, 4 })); // tie 1/4: lower id first
    CHECK((route_select(logits, {}, route_gating::sigmoid, 1) == std::vector<int32_t>{ 3 }));
    CHECK(route_select(logits, {}, route_gating::softmax, 0).empty());
    CHECK(route_select(logits, {}, route_gating::softmax, 9).size() == logits.size());
}

static void test_selection_bias_after_gating() {
    // sigmoid(4) ≈ 0.982 and sigmoid(0) = 0.5: a bias of 0.6 on expert 1 outranks expert 0 after the
    // sigmoid, though 0 + 0.6 < 4 as raw logits.
    const std::vector<float> logits = { 4.0f, 0.0f, -3.0f };
    const std::vector<float> bias   = { 0.0f, 0.6f, 0.0f };
    CHECK((route_select(logits, bias, route_gating::sigmoid, 1) == std::vector<int32_t>{ 1 }));
    CHECK((route_select(logits, {}, route_gating::sigmoid, 1) == std::vector<int32_t>{ 0 }));
    // softmax: probabilities ≈ { 0.981, 0.018, 0.0009 }: 0.6 leaves expert 1 second, 1.0 lifts it first.
    CHECK((route_select(logits, bias, route_gating::softmax, 2) == std::vector<int32_t>{ 0, 1 }));
    CHECK((route_select(logits, { 0.0f, 1.0f, 0.0f }, route_gating::softmax, 2) == std::vector<int32_t>{ 1, 0 }));
}

int main() {
    test_top_k_by_logit();
    test_selection_bias_after_gating();
    return check_report("route_select");
}
