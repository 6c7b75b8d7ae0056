#pragma once
// Closing a forced answer within max_tokens. A grammar that forces the answer (tool_choice
// required or a named function, a JSON schema) decides what may be written, not how much: a
// string argument, an array, a reasoning block may run on until max_tokens cuts the call in half
// (with random or weak weights, almost always). llama.cpp's grammar sampler only masks tokens, so
// bmoe keeps its own copy of the grammar's state beside common_sampler's and, before each token,
// knows the shortest text that completes the grammar from there. While the tokens left exceed
// that completion, the model samples freely (its token is kept only if the completion after it
// still fits); once they do not, the completion is written token by token, then an end of
// generation. So the answer is whole whenever max_tokens can hold the shortest answer at all.
#include "llama.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct llama_grammar;

namespace bmoe {

// The shortest text that takes the grammar from its current state to an accepted end, into
// `out` ("" when it may end now); a character a token left unfinished is finished first. False
// when it cannot be said as text: a token element (<[id]>) on the way, no state left. The
// grammar's state is the same afterwards (it is used to look ahead, then restored).
bool grammar_shortest_completion(llama_grammar & g, std::string & out);

struct answer_close;
struct answer_close_deleter {
    void operator()(answer_close * a) const;
};
using answer_close_ptr = std::unique_ptr<answer_close, answer_close_deleter>;

// The closing state for an eager grammar, fed the generation prompt's tokens as common_sampler
// feeds its grammar (`prefill`: output and tool-call grammars). Throws std::runtime_error when
// llama.cpp cannot parse the grammar.
answer_close_ptr answer_close_init(const llama_vocab * vocab, const std::string & gbnf, const std::string & generation_prompt, bool prefill);

// The token to write now without sampling (the completion has begun, or `left` tokens, this one
// included, hold no more than the completion and its end), or LLAMA_TOKEN_NULL to sample.
llama_token answer_close_forced(answer_close & a, int32_t left);

// Whether a freely sampled token leaves the completion within the `left - 1` tokens after it;
// when not, the caller writes answer_close_forced(a, 1) instead (the completion from here).
bool answer_close_keeps(answer_close & a, llama_token t, int32_t left);

// Whether the grammar takes `t` now (another forced sequence, the reasoning budget's end, is
// written only where it fits).
bool answer_close_takes(answer_close & a, llama_token t);

// Records the token written (sampled or forced) in the closing state's grammar.
void answer_close_accept(answer_close & a, llama_token t);

}  // namespace bmoe
