// THE native parameters: every value the addon reads from a JS parameter object, once, with its
// C++ member, type, default and the range C++ accepts. scripts/contract.mjs generates from it
//   include/bmoe/contract/params.h  the constants the C++ structs default to and the readers check,
//   binding/contract.ts              the binding's parameter types and the same numbers for JS
// (@bmoe/engine's option table takes its native ranges and defaults from there). Edit here, run
// `node scripts/contract.mjs`; the core-native test fails while a generated file is stale.
//
// A field: key (the JS property), cpp (the struct member), type, default, and for numbers the
// range C++ accepts ([min, max], inclusive). Types:
//   int32 | uint32 | int64 | uint64  an integer in [min, max]
//   number                            a finite double in [min, max] (bounds: llama.cpp aborts on NaN)
//   real                              any number, unchecked (llama.cpp treats every value sensibly)
//   bool                              true / false
//   tri                               true / false / 'auto' (absent = 'auto')
//   enum                              one of `values`
// `auto: true` on an integer: the string 'auto' is accepted too. `required: true`: the binding
// type has no `?` (the engine always sends it). `doc`: the TypeScript doc comment.

export const PARAMS = {
  context: {
    doc: "createContext's parameters: the option table's `context` rows.",
    ts: 'NativeContextParams',
    fields: [
      { key: 'nCtx', cpp: 'n_ctx', type: 'uint32', default: 4096, min: 16, max: 2 ** 20, required: true, doc: 'Context (KV cache) size in tokens; llama.cpp refuses fewer than 16.' },
      { key: 'nBatch', cpp: 'n_batch', type: 'uint32', default: 512, min: 1, max: 2 ** 16, required: true, doc: 'Logical batch for prompt processing.' },
      { key: 'nUbatch', cpp: 'n_ubatch', type: 'uint32', default: 512, min: 1, max: 2 ** 16, required: true, doc: 'Physical micro-batch.' },
      { key: 'threads', cpp: 'threads', type: 'int32', default: 4, min: 1, max: 1024, required: true, doc: 'Compute threads.' },
      { key: 'nSeq', cpp: 'n_seq', type: 'uint32', default: 1, min: 1, max: 64, doc: 'Sequences (slots) the context holds, each with its own nCtx tokens of KV cache; generations on different sequences are decoded together, one llama_batch per step.' },
      { key: 'embeddings', cpp: 'embeddings', type: 'bool', default: false, doc: "An embedding context: embed() pools each input's last hidden states into one vector (llama.cpp's embeddings mode); it does not generate." },
      { key: 'pooling', cpp: 'pooling', type: 'enum', values: ['model', 'mean', 'cls', 'last'], default: 'model', doc: "How an embedding context pools an input's token states (llama-server --pooling); 'model' = the GGUF's own, refused when that is none." },
    ],
  },
  sampling: {
    doc: "The option table's sampling rows (`sampling.*` native keys).",
    ts: 'NativeSamplingFields',
    fields: [
      { key: 'temperature', cpp: 'temperature', type: 'real', default: 0, required: true, doc: '0 = greedy (argmax).' },
      { key: 'topK', cpp: 'top_k', type: 'int32', default: 40, min: 0, max: 2 ** 24, required: true, doc: 'Top-k sampling; 0 = off.' },
      { key: 'topP', cpp: 'top_p', type: 'real', default: 0.95, required: true, doc: 'Top-p (nucleus) sampling.' },
      { key: 'seed', cpp: 'seed', type: 'uint32', default: 0, min: 0, max: 0xffffffff, required: true, doc: 'Sampler seed.' },
      { key: 'minP', cpp: 'min_p', type: 'number', default: 0, min: 0, max: 1, doc: 'Minimum probability relative to the most likely token (llama.cpp --min-p); 0 = off.' },
      { key: 'repeatPenalty', cpp: 'repeat_penalty', type: 'number', default: 1, min: 1e-6, max: 1e6, doc: 'Repeat penalty over the last `repeatLastN` tokens (prompt included, as llama.cpp); 1 = off.' },
      { key: 'repeatLastN', cpp: 'repeat_last_n', type: 'int32', default: 64, min: -1, max: 2 ** 24, doc: 'Tokens the penalties look back over; 0 = off, -1 = the context size.' },
      { key: 'presencePenalty', cpp: 'presence_penalty', type: 'number', default: 0, min: -1e6, max: 1e6, doc: 'OpenAI-style additive penalty; 0 = off.' },
      { key: 'frequencyPenalty', cpp: 'frequency_penalty', type: 'number', default: 0, min: -1e6, max: 1e6, doc: 'OpenAI-style additive penalty per occurrence; 0 = off.' },
      { key: 'reasoningBudget', cpp: 'reasoning_budget', type: 'int32', default: -1, min: -1, max: 2 ** 24, doc: "Tokens of reasoning before the end of the block is forced (llama-server's --reasoning-budget / reasoning_budget_tokens); -1 = unlimited (bounded to half of maxTokens when the grammar forces a tool call or JSON), 0 = no reasoning." },
      { key: 'reasoningBudgetMessage', cpp: 'reasoning_budget_message', type: 'text', default: '', maxBytes: 4096, doc: 'Text written before the forced end tag when the reasoning budget runs out; "" = none.' },
    ],
  },
  logitBias: {
    doc: "One entry of `NativeSampling.logitBias` (OpenAI's logit_bias): added to the token's logit before sampling.",
    ts: 'NativeLogitBias',
    fields: [
      { key: 'token', cpp: 'token', type: 'int32', default: 0, min: 0, max: 2 ** 31 - 1, required: true, doc: 'Token id.' },
      { key: 'bias', cpp: 'bias', type: 'number', default: 0, min: -1e6, max: 1e6, required: true, doc: 'Finite, within ±1e6.' },
    ],
  },
  generate: {
    doc: 'The scalar fields of a NativeGenerateRequest (its tokens, sampling and grammar are typed beside it).',
    ts: 'NativeGenerateFields',
    fields: [
      { key: 'seq', cpp: 'seq', type: 'int32', default: 0, min: 0, max: 63, doc: "The context's sequence (slot) to generate on: 0 .. nSeq - 1." },
      { key: 'maxTokens', cpp: 'max_tokens', type: 'int32', default: 256, min: 0, max: 2 ** 24, required: true, doc: 'Tokens to generate at most.' },
      { key: 'logits', cpp: 'want_logits', type: 'bool', default: false, doc: "Attach each sampled position's logits to its event." },
      { key: 'contextShift', cpp: 'context_shift', type: 'bool', default: false, doc: 'When the context fills, drop the older half and go on (llama.cpp --context-shift) instead of stopping with "context".' },
      { key: 'nProbs', cpp: 'n_probs', type: 'int32', default: -1, min: -1, max: 20, doc: "Log-probabilities: each token's event carries its own and the nProbs most likely tokens' at its position (the model's distribution before sampling, as llama-server's n_probs); -1 = none." },
      { key: 'promptLogprobs', cpp: 'prompt_logprobs', type: 'bool', default: false, doc: "Score the prompt: the result carries each prompt token's log-probability after the ones before it (and nProbs alternatives); the whole prompt is evaluated again (no prefix reuse)." },
      { key: 'background', cpp: 'background', type: 'bool', default: false, doc: "Background work (a turn preparation): its prompt is evaluated only in steps where no other generation's prompt waits, at most 64 tokens a step, and a request that arrives during such a step stops it at its next graph node (the chunk is evaluated again later)." },
      { key: 'grammarStepMs', cpp: 'grammar_step_ms', type: 'int32', default: 10000, min: 1, max: 600000, doc: 'One sampling step under a grammar may take this long before the request fails naming the grammar.' },
    ],
  },
  model: {
    doc: 'The scalar fields of NativeModelParams (its path, progress callback, overrides and stream object are typed beside it).',
    ts: 'NativeModelFields',
    fields: [
      { key: 'useMmap', cpp: 'use_mmap', type: 'bool', default: true, doc: 'Map the file (llama.cpp `use_mmap`).' },
      { key: 'repack', cpp: 'repack', type: 'bool', default: true, doc: "Let ggml repack weights into its faster CPU layouts (llama.cpp's default; `-nr` turns it off). No-op where the CPU has no repacked layout for a type (and in the wasm32-wasi build)." },
      { key: 'hugePages', cpp: 'huge_pages', type: 'bool', default: true, doc: "Advise transparent huge pages (madvise MADV_HUGEPAGE) for the weights a resident load copies into anonymous memory (repacked layouts; every weight without mmap), before they are filled, and for a streamed model's expert cache slots: fewer TLB misses per token. Nothing where THP is off (`never`), or for the file mapping (the page cache gives it large folios itself). llama.cpp does not ask for them." },
    ],
  },
  stream: {
    doc: 'Expert streaming (`--moe-stream`); present = on. The flags, help and API ranges are rows of @bmoe/engine\'s option table.',
    ts: 'NativeStreamParams',
    fields: [
      { key: 'cacheMb', cpp: 'cache_mb', type: 'uint64', default: 0, min: 0, max: 2 ** 24, auto: true, required: true, doc: "Expert cache budget in MiB (0 = no cache); 'auto' = what MemAvailable and the memory cgroup leave above `cacheFloorMb`." },
      { key: 'cacheCeilMb', cpp: 'cache_ceil_mb', type: 'uint64', default: 0, min: 0, max: 2 ** 24, doc: "Ceiling for cacheMb 'auto', in MiB; 0 = none." },
      { key: 'ioThreads', cpp: 'io_threads', type: 'int32', default: 4, min: 1, max: 64, doc: 'Parallel read lanes, each with its own descriptor.' },
      { key: 'overlap', cpp: 'overlap', type: 'tri', default: 'auto', doc: "true forces overlapped reads (needs patch 0002: see buildInfo().overlapSupported), false forces serial; 'auto' or absent: measured together with routeAhead (stream/decode_choice.h), the fastest combination kept and measured again every 128 tokens, or once early when the kept one's decodes drift 25 % slower. Without patch 0002, auto is serial." },
      { key: 'prefetch', cpp: 'prefetch', type: 'int32', default: 0, min: 0, max: 64, doc: "Read ahead the N most popular experts of the next layer; 0 = off." },
      { key: 'routeAhead', cpp: 'route_ahead', type: 'tri', default: 'auto', doc: "true forces route-ahead reads, false forbids them; 'auto' or absent: measured with overlap, used only where that combination is faster." },
      { key: 'odirect', cpp: 'odirect', type: 'bool', default: true, doc: 'Read with O_DIRECT (buffered, with one warning, where refused).' },
      { key: 'denseWeights', cpp: 'dense_weights', type: 'enum', values: ['mmap', 'anon'], default: 'mmap', doc: 'Hold the non-expert weights in the file mapping or in anonymous memory.' },
      { key: 'forceCache', cpp: 'force_cache', type: 'bool', default: false, doc: "Accept a cache budget below one token's routed working set." },
    ],
  },
  chatFormat: {
    doc: 'The chat formatting options of applyChatTemplate / prepare.',
    ts: 'NativeChatFormat',
    fields: [
      { key: 'chatml', cpp: 'chatml', type: 'bool', default: false, doc: "ChatML instead of the GGUF's template." },
      { key: 'think', cpp: 'think', type: 'bool', default: true, doc: "false: the template's reasoning off (Qwen3 enable_thinking=false; gpt-oss answers on its final channel)." },
      { key: 'addAssistant', cpp: 'add_assistant', type: 'bool', default: true, doc: "End with the assistant's generation prompt." },
    ],
  },
};

// Constants C++ decides with and JS must say the same (help text, the settings rule).
export const CONSTANTS = [
  { name: 'cacheFloorMb', cpp: 'cache_floor_mb', type: 'uint64', value: 1024, doc: "MemAvailable (MiB) that cacheMb 'auto' leaves to the system." },
];
