// Chat messages, tools and the parsed answer, in OpenAI's shapes (what llama.cpp's oaicompat
// readers take and what the server passes through), with their validation and their JSON form.
import type { NativeChatMessage } from '@bmoe/core-native';
import { BmoeError } from './errors.js';
import { show } from './options/values.js';

/** A tool call an assistant turn made, in OpenAI's shape. */
export interface ToolCall {
  /** Unique in its conversation; the tool's answer names it (`toolCallId`). */
  id: string;
  type: 'function';
  function: {
    name: string;
    /** The arguments as JSON text. */
    arguments: string;
  };
}

/** One message of a conversation. */
export interface ChatMessage {
  /** 'system' | 'developer' | 'user' | 'assistant' | 'tool' (or any role the model's template knows). */
  role: string;
  /** The text; null is allowed for an assistant turn that only calls tools. */
  content: string | null;
  /** An assistant turn's reasoning (templates that keep it put it back in the prompt). */
  reasoningContent?: string;
  /** An assistant turn's tool calls. */
  toolCalls?: readonly ToolCall[];
  /** Role 'tool': the id of the call this message answers. */
  toolCallId?: string;
  /** Role 'tool': the function's name. */
  name?: string;
}

/** A function the model may call (OpenAI's `tools` entry). */
export interface ToolDefinition {
  type: 'function';
  function: {
    name: string;
    description?: string;
    /** The arguments' JSON schema. */
    parameters?: Record<string, unknown>;
  };
}

/**
 * Whether the model may or must call a tool: 'auto' (it decides), 'none' (it answers in text),
 * 'required' (it calls one or more), or one named function (it calls exactly that one).
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** The answer of a generation, read by the model's chat format (llama.cpp's parser). */
export interface AssistantMessage {
  role: 'assistant';
  /** The answer's text (reasoning and tool-call markup taken out). */
  content: string;
  /** The reasoning (Qwen3 `<think>`, gpt-oss analysis channel); null when there is none. */
  reasoningContent: string | null;
  /** The calls the answer makes, in order; empty when none. */
  toolCalls: ToolCall[];
}

/** What one token adds to a tool call: the first delta of a call carries its id, type and name. */
export interface ToolCallDelta {
  /** The call's position in `AssistantMessage.toolCalls`. */
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/**
 * What one token adds to the parsed answer. Empty while text is held back (a possible stop
 * string, an unfinished tag); nothing sent is ever taken back.
 */
export interface MessageDelta {
  content?: string;
  reasoningContent?: string;
  toolCalls?: ToolCallDelta[];
}

const isString = (v: unknown): v is string => typeof v === 'string';

function checkToolCall(v: unknown, at: string): ToolCall {
  const c = v as Partial<ToolCall> | null;
  const f = c?.function as Partial<ToolCall['function']> | undefined;
  if (c === null || typeof c !== 'object' || !isString(c.id) || (c.type !== undefined && c.type !== 'function') || !isString(f?.name) || !isString(f?.arguments)) {
    throw new BmoeError('E_OPTION', `${at} must be { id: string, type: 'function', function: { name: string, arguments: string } }, got ${show(v)}`);
  }
  return { id: c.id, type: 'function', function: { name: f.name, arguments: f.arguments } };
}

/** One message, checked and copied (only the known fields). */
function checkMessage(m: unknown, i: number): ChatMessage {
  const at = `messages[${i}]`;
  const msg = m as Partial<ChatMessage> | null;
  if (msg === null || typeof msg !== 'object' || !isString(msg.role)) {
    throw new BmoeError('E_OPTION', `${at} must be { role: string, content: string }, got ${show(m)}`);
  }
  const calls = msg.toolCalls;
  if (calls !== undefined && !Array.isArray(calls)) throw new BmoeError('E_OPTION', `${at}.toolCalls must be an array, got ${show(calls)}`);
  if (!isString(msg.content) && !(msg.content === null && msg.role === 'assistant')) {
    throw new BmoeError('E_OPTION', `${at}.content must be a string (null only for an assistant turn), got ${show(msg.content)}`);
  }
  const out: ChatMessage = { role: msg.role, content: msg.content };
  for (const key of ['reasoningContent', 'toolCallId', 'name'] as const) {
    const v = msg[key];
    if (v === undefined) continue;
    if (!isString(v)) throw new BmoeError('E_OPTION', `${at}.${key} must be a string, got ${show(v)}`);
    out[key] = v;
  }
  if (calls && calls.length > 0) out.toolCalls = calls.map((c, j) => checkToolCall(c, `${at}.toolCalls[${j}]`));
  return out;
}

/** A conversation, checked: a non-empty array of messages (copies, only the known fields). */
export function checkMessages(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new BmoeError('E_OPTION', 'messages must be a non-empty array of { role, content }');
  }
  return messages.map(checkMessage);
}

/** The messages as OpenAI's JSON (what llama.cpp's common_chat_msgs_parse_oaicompat reads). */
export function messagesJson(messages: readonly ChatMessage[]): string {
  return JSON.stringify(
    messages.map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.toolCalls && m.toolCalls.length > 0 ? { tool_calls: m.toolCalls } : {}),
      ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
      ...(m.name !== undefined ? { name: m.name } : {}),
      ...(m.reasoningContent !== undefined ? { reasoning_content: m.reasoningContent } : {}),
    })),
  );
}

/** Role and text only, for the template path of a build without llama.cpp's chat layer (wasm). */
export function plainMessages(messages: readonly ChatMessage[]): NativeChatMessage[] {
  return messages.map((m, i) => {
    if (m.toolCalls && m.toolCalls.length > 0) {
      throw new BmoeError('E_UNSUPPORTED', `messages[${i}] has tool calls, which this build cannot format (the wasm32 build has no llama.cpp chat layer)`);
    }
    return { role: m.role, content: m.content ?? '' };
  });
}

/** The assistant turn that joins a history: OpenAI's shape (content null when it only calls tools). */
export function historyMessage(m: AssistantMessage): ChatMessage {
  const calls = m.toolCalls.length > 0;
  return {
    role: 'assistant',
    content: calls && m.content === '' ? null : m.content,
    ...(m.reasoningContent ? { reasoningContent: m.reasoningContent } : {}),
    ...(calls ? { toolCalls: m.toolCalls.map((c) => ({ ...c, function: { ...c.function } })) } : {}),
  };
}
