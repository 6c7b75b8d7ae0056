// Bounds on what one request may ask for, checked once, up front (before it waits for the model),
// each naming its field in a 400. The prompt bounds follow from the context: a request over them
// could never fit, and templating and tokenizing it would cost time (llama.cpp's special-token
// split grows with the square of the special tokens in the text) for nothing.
import { optionRow, type IntSpec, type OptionKey } from '@bmoe/engine/options';
import { badRequest, type ApiError } from './errors.js';

/** The largest value an integer option takes: its row of the engine's option table (whose native bounds are core-native's contract). */
export function optionMax(key: OptionKey): number {
  const v = optionRow(key).value as IntSpec;
  return v.max ?? Number.MAX_SAFE_INTEGER;
}

/** The native core's largest count (`max_tokens`, `top_k`): 2^24, as the option table says. */
export const NATIVE_MAX_COUNT = optionMax('maxTokens');

/** The longest reasoning budget message, in UTF-8 bytes (core-native's contract: `reasoningBudgetMessage.maxBytes`). */
export const MAX_REASONING_BUDGET_MESSAGE_BYTES = 4096;

/**
 * The most choices one request may ask for (OpenAI's `n`, chat and completions). The choices are
 * generated one after another in the request's slot (respond.ts), so a request with `n` holds its
 * turn about n times as long as with one: the bound keeps that, and what it takes from the clients
 * waiting behind it, within a small multiple.
 */
export const MAX_CHOICES = 8;

/** A chat template spends at least this many tokens per message (its role markers). */
const MIN_TOKENS_PER_MESSAGE = 4;
/** Text averages 3–5 characters a token; a prompt over 16 per token of the context cannot fit. */
const MAX_CHARS_PER_TOKEN = 16;

export interface RequestLimits {
  /** Messages in one chat request. */
  maxMessages: number;
  /** Characters of prompt text in one request: the message contents together, or the prompt. */
  maxPromptChars: number;
}

/** For a context of `contextSize` tokens: 1024 messages and 65536 characters at the default 4096. */
export function limitsFor(contextSize: number): RequestLimits {
  return {
    maxMessages: Math.max(1, Math.floor(contextSize / MIN_TOKENS_PER_MESSAGE)),
    maxPromptChars: contextSize * MAX_CHARS_PER_TOKEN,
  };
}

/** The refusal for a prompt over the limits, or null. `texts` are the message contents (or the one prompt). */
export function checkPrompt(texts: readonly string[], inputParam: 'messages' | 'prompt' | 'tools', limits: RequestLimits, contextSize: number): ApiError | null {
  if (inputParam === 'messages' && texts.length > limits.maxMessages) {
    return badRequest(
      `too many messages: ${texts.length}; at most ${limits.maxMessages} fit the context of ${contextSize} tokens`,
      'messages',
      'context_length_exceeded',
    );
  }
  let chars = 0;
  for (const t of texts) chars += t.length;
  if (chars > limits.maxPromptChars) {
    const what = inputParam === 'messages' ? 'the messages hold' : inputParam === 'tools' ? 'the tools hold' : 'the prompt is';
    return badRequest(
      `${what} ${chars} characters; at most ${limits.maxPromptChars} can fit the context of ${contextSize} tokens`,
      inputParam,
      'context_length_exceeded',
    );
  }
  return null;
}
