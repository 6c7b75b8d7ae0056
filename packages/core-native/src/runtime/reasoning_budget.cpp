#include "bmoe/runtime/reasoning_budget.h"

#include <algorithm>

namespace bmoe {

namespace {

// Continuation bytes still owed by the last character after `piece` (0: it ends on a boundary).
int owed_bytes(const std::string & piece, int owed) {
    for (unsigned char c : piece) {
        if ((c & 0xC0) == 0x80) owed = owed > 0 ? owed - 1 : 0;
        else owed = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    }
    return owed;
}

size_t longest_tag(const reasoning_budget & rb) {
    size_t n = rb.start.size();
    for (const auto & e : rb.ends) n = std::max(n, e.size());
    return n;
}

// Keeps `text` from growing without bound: only a tag's length of it is ever searched again.
void trim(reasoning_budget & rb, size_t keep) {
    if (rb.text.size() > 4 * keep + 64) rb.text.erase(0, rb.text.size() - keep);
}

bool ends_with_end_tag(const reasoning_budget & rb, size_t searched_from) {
    for (const auto & e : rb.ends) {
        if (!e.empty() && rb.text.find(e, searched_from) != std::string::npos) return true;
    }
    return false;
}

}  // namespace

reasoning_budget reasoning_budget_make(const std::string & start, const std::vector<std::string> & ends, int32_t budget, const std::string & message) {
    reasoning_budget rb;
    rb.start       = start;
    rb.ends        = ends;
    rb.budget      = budget;
    rb.forced_text = message + (ends.empty() ? std::string() : ends.front());
    return rb;
}

void reasoning_budget_prefill(reasoning_budget & rb, const std::string & generation_prompt) {
    const size_t at = rb.start.empty() ? std::string::npos : generation_prompt.rfind(rb.start);
    if (at == std::string::npos) return;
    rb.text = generation_prompt.substr(at + rb.start.size());
    if (ends_with_end_tag(rb, 0)) {
        rb.state = reasoning_budget::done;
        rb.text.clear();
        return;
    }
    rb.state     = rb.budget == 0 ? reasoning_budget::forcing : reasoning_budget::counting;
    rb.remaining = rb.budget;
}

void reasoning_budget_accept(reasoning_budget & rb, const std::string & piece) {
    if (rb.start.empty() || rb.budget < 0) return;
    const size_t keep = longest_tag(rb);
    // Search only where a tag could newly appear: the last tag's length before this piece.
    const size_t from = rb.text.size() > keep ? rb.text.size() - keep : 0;
    rb.text += piece;
    rb.owed_utf8 = owed_bytes(piece, rb.owed_utf8);
    switch (rb.state) {
        case reasoning_budget::idle:
        case reasoning_budget::done: {
            const size_t at = rb.text.find(rb.start, from);
            if (at != std::string::npos) {
                rb.text.erase(0, at + rb.start.size());
                rb.remaining = rb.budget;
                rb.state     = rb.budget == 0 ? reasoning_budget::forcing : reasoning_budget::counting;
            }
            break;
        }
        case reasoning_budget::counting:
            if (ends_with_end_tag(rb, from)) {
                rb.state = reasoning_budget::done;
                rb.text.clear();
                break;
            }
            if (--rb.remaining <= 0 && rb.owed_utf8 == 0) rb.state = reasoning_budget::forcing;
            break;
        case reasoning_budget::forcing:
            if (ends_with_end_tag(rb, from)) {
                rb.state = reasoning_budget::done;
                rb.text.clear();
            }
            break;
    }
    // A used-up budget waits for a whole character before forcing.
    if (rb.state == reasoning_budget::counting && rb.remaining <= 0 && rb.owed_utf8 == 0) rb.state = reasoning_budget::forcing;
    trim(rb, keep);
}

}  // namespace bmoe
