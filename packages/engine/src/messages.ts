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

/**
 * An image in a message: a file path, a `data:image/...;base64,` URL, or the encoded bytes (PNG,
 * JPEG, GIF, BMP, ... what llama.cpp's image reader takes).
 */
export type ImageSource = string | Uint8Array;

/** A part of a message's content: text, or an image where it stands in the text. */
export type ContentPart = { type: 'text'; text: string } | { type: 'image'; image: ImageSource };

/** Content given as parts (Array.isArray does not narrow a readonly array). */
export function isParts(content: ChatMessage['content']): content is readonly ContentPart[] {
  return Array.isArray(content);
}

/** One message of a conversation. */
export interface ChatMessage {
  /** 'system' | 'developer' | 'user' | 'assistant' | 'tool' (or any role the model's template knows). */
  role: string;
  /**
   * The text; null is allowed for an assistant turn that only calls tools. Parts carry images
   * (the model needs its projector, `LoadOptions.mmproj`); text parts are joined with newlines,
   * images stand where they are, as llama-server joins them.
   */
  content: string | null | readonly ContentPart[];
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

function checkParts(parts: readonly unknown[], at: string): ContentPart[] {
  return parts.map((p, i) => {
    const part = p as { type?: unknown; text?: unknown; image?: unknown } | null;
    if (part?.type === 'text' && isString(part.text)) return { type: 'text', text: part.text };
    if (part?.type === 'image' && (isString(part.image) || part.image instanceof Uint8Array)) {
      if (isString(part.image) && part.image.length === 0) throw new BmoeError('E_OPTION', `${at}[${i}].image must be a file path, a data URL or bytes, got ''`);
      return { type: 'image', image: part.image };
    }
    throw new BmoeError('E_OPTION', `${at}[${i}] must be { type: 'text', text: string } or { type: 'image', image: path | data URL | Uint8Array }, got ${show(p)}`);
  });
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
  const content = Array.isArray(msg.content) ? checkParts(msg.content as unknown[], `${at}.content`) : msg.content;
  if (!isString(content) && !Array.isArray(content) && !(content === null && msg.role === 'assistant')) {
    throw new BmoeError('E_OPTION', `${at}.content must be a string or an array of parts (null only for an assistant turn), got ${show(msg.content)}`);
  }
  const out: ChatMessage = { role: msg.role, content: content as ChatMessage['content'] };
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

/** The images of a conversation, in the order their markers appear in its formatted prompt. */
export function messageImages(messages: readonly ChatMessage[]): ImageSource[] {
  const out: ImageSource[] = [];
  for (const m of messages) {
    if (!isParts(m.content)) continue;
    for (const p of m.content) if (p.type === 'image') out.push(p.image);
  }
  return out;
}

/** Content as llama.cpp reads it: a string, or text parts and media markers (`marker` where each image goes). */
function contentJson(content: ChatMessage['content'], marker: string): unknown {
  if (!isParts(content)) return content;
  return content.map((p) => (p.type === 'text' ? p : { type: 'media_marker', text: marker }));
}

/**
 * The messages as OpenAI's JSON (what llama.cpp's common_chat_msgs_parse_oaicompat reads); an
 * image becomes a media marker part (`marker`, the projector's), as llama-server sends it.
 */
export function messagesJson(messages: readonly ChatMessage[], marker = '<__media__>'): string {
  return JSON.stringify(
    messages.map((m) => ({
      role: m.role,
      content: contentJson(m.content, marker),
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
    if (isParts(m.content)) {
      const parts = m.content;
      if (parts.some((p) => p.type === 'image')) {
        throw new BmoeError('E_UNSUPPORTED', `messages[${i}] has an image, which this build cannot take (the wasm32-wasi build has no multimodal library); \`bmoe native build\` makes a native one for this machine`);
      }
      return { role: m.role, content: parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') };
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
