// The Response object of OpenAI's Responses API: what POST /v1/responses answers (and the
// response in the stream's lifecycle events). Mirrors llama.cpp's
// server_task_result_cmpl_final::to_json_oaicompat_resp (tools/server/server-task.cpp): a
// reasoning item (reasoning_text), a message item (output_text), a function_call item per call,
// usage with input_tokens_details.cached_tokens from the KV cache. Beyond llama.cpp: an answer cut
// by max_output_tokens is `incomplete` (as OpenAI's), the request's settings are echoed, and the
// `bmoe` run summary rides along as on chat completions.
import { randomBytes } from 'node:crypto';
import type { AssistantMessage, GenerationResult } from '@bmoe/engine';
import type { BmoeResult } from '../types.js';
import type { InputItem, ResponsesBody } from './schema.js';

export const newId = (prefix: 'resp' | 'msg' | 'rs' | 'fc'): string => `${prefix}_${randomBytes(12).toString('hex')}`;

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
export interface OutputTextPart {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}
export interface ReasoningTextPart {
  type: 'reasoning_text';
  text: string;
}
export interface MessageItem {
  type: 'message';
  id: string;
  role: 'assistant';
  status: ItemStatus;
  content: OutputTextPart[];
}
export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  status: ItemStatus;
  summary: Array<{ type: 'summary_text'; text: string }>;
  content: ReasoningTextPart[];
}
export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  status: ItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}
export type OutputItem = MessageItem | ReasoningItem | FunctionCallItem;

export interface ResponseUsage {
  input_tokens: number;
  /** The input tokens found in the slot's KV cache (the previous turn's prefix, for a follow-up). */
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  total_tokens: number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  model: string;
  output: OutputItem[];
  instructions: string | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  temperature: number;
  top_p: number;
  tool_choice: 'auto' | 'none' | 'required' | { type: 'function'; name: string };
  tools: Array<{ type: 'function'; name: string; description: string | null; parameters: Record<string, unknown> | null; strict: boolean }>;
  text: { format: NonNullable<NonNullable<ResponsesBody['text']>['format']> };
  reasoning: { effort: 'none' | null; summary: null };
  max_output_tokens: number | null;
  previous_response_id: string | null;
  store: boolean;
  truncation: 'disabled';
  background: false;
  usage: ResponseUsage | null;
  bmoe?: BmoeResult;
}

export function responseUsage(result: GenerationResult): ResponseUsage {
  return {
    input_tokens: result.promptTokens,
    input_tokens_details: { cached_tokens: result.promptTokensReused },
    output_tokens: result.generatedTokens,
    total_tokens: result.promptTokens + result.generatedTokens,
  };
}

const outputText = (text: string): OutputTextPart => ({ type: 'output_text', text, annotations: [], logprobs: [] });

export const messageItem = (id: string, text: string, status: ItemStatus): MessageItem => ({ type: 'message', id, role: 'assistant', status, content: status === 'in_progress' ? [] : [outputText(text)] });
export const reasoningItem = (id: string, text: string, status: ItemStatus): ReasoningItem => ({ type: 'reasoning', id, status, summary: [], content: status === 'in_progress' ? [] : [{ type: 'reasoning_text', text }] });
export const functionCallItem = (id: string, callId: string, name: string, args: string, status: ItemStatus): FunctionCallItem => ({ type: 'function_call', id, status, call_id: callId, name, arguments: args });
export { outputText };

/** The finished answer's output items (non-streamed): reasoning, then the message, then the calls. */
export function outputItems(m: AssistantMessage, cut: boolean): OutputItem[] {
  const out: OutputItem[] = [];
  const status: ItemStatus = cut ? 'incomplete' : 'completed';
  if (m.reasoningContent) out.push(reasoningItem(newId('rs'), m.reasoningContent, status));
  if (m.content !== '') out.push(messageItem(newId('msg'), m.content, status));
  for (const c of m.toolCalls) out.push(functionCallItem(newId('fc'), c.id, c.function.name, c.function.arguments, 'completed'));
  return out;
}

/** Output items as the input items that send them back (what previous_response_id continues with). */
export function asInputItems(items: readonly OutputItem[]): InputItem[] {
  return items.map((i): InputItem => {
    if (i.type === 'message') return { ...i, content: i.content.map((p) => ({ ...p })) };
    if (i.type === 'reasoning') return { ...i, summary: [], content: i.content.map((p) => ({ ...p })) };
    return { ...i };
  });
}

/** One request's Response: its id and creation time, and its settings echoed. */
export class ResponseFrame {
  readonly id = newId('resp');
  readonly createdAt = Math.floor(Date.now() / 1000);

  constructor(
    private readonly body: ResponsesBody,
    private readonly model: string,
  ) {}

  /** The Response with this status and output (usage and bmoe once finished). */
  response(status: ResponseStatus, output: OutputItem[], usage: ResponseUsage | null = null, bmoe?: BmoeResult, error: ResponseObject['error'] = null): ResponseObject {
    const b = this.body;
    const choice = b.tool_choice ?? 'auto';
    const done = status !== 'in_progress';
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      completed_at: status === 'completed' ? Math.floor(Date.now() / 1000) : null,
      status,
      error,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      model: this.model,
      output,
      instructions: b.instructions ?? null,
      metadata: b.metadata ?? {},
      parallel_tool_calls: b.parallel_tool_calls ?? true,
      temperature: b.temperature ?? 1,
      top_p: b.top_p ?? 1,
      tool_choice: typeof choice === 'string' ? choice : { type: 'function', name: choice.name },
      tools: (b.tools ?? []).map((t) => ({ type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? true })),
      text: { format: b.text?.format ?? { type: 'text' } },
      reasoning: { effort: b.reasoning?.effort ?? null, summary: null },
      max_output_tokens: b.max_output_tokens ?? null,
      previous_response_id: b.previous_response_id ?? null,
      store: b.store ?? true,
      truncation: 'disabled',
      background: false,
      usage: done ? usage : null,
      ...(bmoe ? { bmoe } : {}),
    };
  }
}
