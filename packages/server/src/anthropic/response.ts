// A finished generation as Anthropic's Message: a port of llama.cpp's
// server_task_result_cmpl_final::to_json_anthropic (tools/server/server-task.cpp). Its rules: the
// content blocks are the reasoning (a thinking block, empty signature: a local model signs
// nothing), then the text, then one tool_use block per call (its arguments parsed, {} when they do
// not parse); stop_reason is end_turn, or tool_use when the answer called tools, for an answer that
// ended (end of generation or a stop string), else max_tokens; usage counts the prompt tokens
// found in the KV cache as cache_read_input_tokens and the rest as input_tokens.
// Beyond llama.cpp: a user stop sequence that ended the answer is stop_reason stop_sequence with
// stop_sequence naming it (llama.cpp sends end_turn with the string), a full context is
// model_context_window_exceeded, and the body carries the server's `bmoe` result.
import { randomBytes } from 'node:crypto';
import type { AssistantMessage, GenerationResult } from '@bmoe/engine';
import type { BmoeResult } from '../types.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'model_context_window_exceeded';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export type OutputBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicMessageBody {
  id: string;
  type: 'message';
  role: 'assistant';
  content: OutputBlock[];
  model: string;
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
  bmoe?: BmoeResult;
}

/** Why the answer ended, and the stop sequence when one of the request's ended it. */
export interface Ending {
  reason: StopReason;
  sequence: string | null;
}

export const messageId = (): string => `msg_${randomBytes(12).toString('hex')}`;

/** Anthropic's usage: prompt tokens evaluated as input, those the KV cache held as cache reads. */
export function usageOf(promptTokens: number, reused: number, outputTokens: number): AnthropicUsage {
  return { input_tokens: promptTokens - reused, output_tokens: outputTokens, cache_read_input_tokens: reused, cache_creation_input_tokens: 0 };
}

export const resultUsage = (r: GenerationResult): AnthropicUsage => usageOf(r.promptTokens, r.promptTokensReused, r.generatedTokens);

/**
 * Which of the request's stop sequences ended the answer, from the generated text (`raw`: the
 * tokens' text, the stop string included): the one found first, as the engine's matcher takes it.
 */
export function matchedStop(raw: string, stops: readonly string[]): string | null {
  let best: string | null = null;
  let at = Infinity;
  for (const s of stops) {
    const i = s === '' ? -1 : raw.indexOf(s);
    if (i >= 0 && i < at) {
      at = i;
      best = s;
    }
  }
  return best;
}

/** stop_reason (and stop_sequence) of a finished generation; `matched` is the stop sequence found in its text. */
export function endingOf(result: GenerationResult, matched: string | null): Ending {
  const calls = result.message.toolCalls.length > 0;
  switch (result.stopReason) {
    case 'eog':
      return { reason: calls ? 'tool_use' : 'end_turn', sequence: null };
    case 'stop':
      // A stop string the template adds (its end-of-turn text) ends the turn as the model's own end does.
      if (matched !== null && !calls) return { reason: 'stop_sequence', sequence: matched };
      return { reason: calls ? 'tool_use' : 'end_turn', sequence: null };
    case 'context':
      return { reason: 'model_context_window_exceeded', sequence: null };
    default:
      return { reason: 'max_tokens', sequence: null };
  }
}

/** A call's arguments as the tool_use input: the parsed object, {} when they are not one (as llama.cpp). */
export function toolInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The answer's content blocks: thinking, text, tool_use (in that order, as llama.cpp). */
export function contentBlocks(m: AssistantMessage): OutputBlock[] {
  const out: OutputBlock[] = [];
  if (m.reasoningContent) out.push({ type: 'thinking', thinking: m.reasoningContent, signature: '' });
  if (m.content !== '') out.push({ type: 'text', text: m.content });
  for (const c of m.toolCalls) out.push({ type: 'tool_use', id: c.id, name: c.function.name, input: toolInput(c.function.arguments) });
  return out;
}

/** The whole answer as one Message body. */
export function messageBody(id: string, model: string, result: GenerationResult, ending: Ending, bmoe: BmoeResult): AnthropicMessageBody {
  return {
    id,
    type: 'message',
    role: 'assistant',
    content: contentBlocks(result.message),
    model,
    stop_reason: ending.reason,
    stop_sequence: ending.sequence,
    usage: resultUsage(result),
    bmoe,
  };
}
