#pragma once
// The reasoning budget (llama-server's --reasoning-budget / reasoning_budget_tokens), read on the
// generated TEXT. llama.cpp's own (common/reasoning-budget.cpp) matches the template's tags as
// token sequences, so a model that spells the start tag out in ordinary tokens ("<", "think", ">")
// reasons without bound, and the template's own tokens after a start tag it wrote ("<think>\n")
// use up the budget. Here the tags are found in the text, whatever tokens wrote them, and only
// generated tokens count. Pure: fed pieces, it says when to write the end (the caller forces the
// tokens of `forced_text`). Unit-tested without a model (ctest reasoning_budget).
#include <cstdint>
#include <string>
#include <vector>

namespace bmoe {

struct reasoning_budget {
    enum state_t { idle, counting, forcing, done };

    std::string              start;         // the template's start tag
    std::vector<std::string> ends;          // its end tags; the first is the one forced
    int32_t                  budget = -1;   // generated tokens of reasoning allowed; < 0 = unlimited
    std::string              forced_text;   // the message, then the first end tag

    state_t     state     = idle;
    int32_t     remaining = 0;
    std::string text;                       // the text since the last start tag (bounded)
    int         owed_utf8 = 0;              // bytes the last character still needs (a piece ended inside it)
};

reasoning_budget reasoning_budget_make(const std::string & start, const std::vector<std::string> & ends, int32_t budget, const std::string & message);

// The text the template already wrote for the answer (its generation prompt): a start tag it
// opened and did not close starts the count (no token of it counts).
void reasoning_budget_prefill(reasoning_budget & rb, const std::string & generation_prompt);

// One generated token's bytes. Counts it while counting; a start tag in the text starts the count,
// an end tag ends it.
void reasoning_budget_accept(reasoning_budget & rb, const std::string & piece);

// The budget is used up and the end must be written now (at a character boundary).
inline bool reasoning_budget_must_end(const reasoning_budget & rb) { return rb.state == reasoning_budget::forcing; }

}  // namespace bmoe
