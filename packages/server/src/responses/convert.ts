// A Responses request → the chat completion request the server already serves: a port of
// llama.cpp's server_chat_convert_responses_to_chatcmpl (tools/server/server-chat.cpp). Its rules:
// `instructions` is the first (system) message; a string input is one user message; in an item
// list, user/system/developer messages keep their text parts (a user's input_image parts become
// image_url parts, as llama.cpp converts them), and an assistant output message,
// a function_call or a reasoning item that follows an assistant message merges into it (its text,
// tool_calls, reasoning_content), else starts one; a function_call_output is a tool message;
// function tools become chat tools; max_output_tokens is max_tokens; reasoning.effort is
// reasoning_effort. Beyond llama.cpp: previous_response_id continues a stored response (its items
// come first; its instructions do not carry over, as OpenAI's), and a reasoning item without
// reasoning_text falls back to its summary text.
import type { ImageRef } from '../images.js';
import type { MessageBody } from '../request-fields.js';
import type { ChatCompletionBody } from '../schemas.js';
import type { ContentPart, InputImage, InputItem, InputTokensBody, ResponsesBody, TextFormat } from './schema.js';

type Message = MessageBody;
type Body = ResponsesBody | InputTokensBody;

type Part = Extract<NonNullable<Message['content']>, readonly unknown[]>[number];
type Parts = string | ReadonlyArray<{ type: string }>;

/** Text and image parts only get past the schema (files, audio are refused there). */
const isText = (p: { type: string }): p is Exclude<ContentPart, InputImage> => p.type === 'input_text' || p.type === 'output_text';
const isImage = (p: { type: string }): p is InputImage => p.type === 'input_image';
const textOf = (content: Parts): string => (typeof content === 'string' ? content : content.filter(isText).map((p) => p.text).join('\n'));

/** A user, system or developer message's content: its text, or (with images) text and image_url parts. */
function inputContent(content: Parts): Message['content'] {
  if (typeof content === 'string' || !content.some(isImage)) return textOf(content);
  return content.flatMap((p): Part[] => (isImage(p) ? [{ type: 'image_url', image_url: { url: p.image_url ?? '' } }] : isText(p) ? [{ type: 'text', text: p.text }] : []));
}

/** The string input, or the items, as the item list they stand for. */
export function itemsOf(input: Body['input']): InputItem[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return input.filter((i): i is InputItem => i.type !== 'item_reference');
}

/**
 * The images of a conversation, in order, each with the field it came in: the stored items' (of
 * `previous_response_id`), then the input's. For images.ts to read.
 */
export function imageRefs(stored: readonly InputItem[], input: Body['input']): ImageRef[] {
  const refs: ImageRef[] = [];
  const add = (item: Extract<InputItem, { type: 'message' }>, at: (j: number) => string): void => {
    if (typeof item.content === 'string') return;
    item.content.forEach((p, j) => {
      if (isImage(p) && p.image_url) refs.push({ url: p.image_url, param: at(j) });
    });
  };
  for (const item of stored) if (item.type === 'message') add(item, () => 'previous_response_id');
  if (Array.isArray(input)) input.forEach((item, i) => item.type === 'message' && add(item, (j) => `input[${i}].content[${j}].image_url`));
  return refs;
}

/** The assistant message an item merges into: the last message when it is the assistant's, else a new one. */
function assistantFor(out: Message[]): Message {
  const last = out.at(-1);
  if (last?.role === 'assistant') return last;
  const fresh: Message = { role: 'assistant', content: null };
  out.push(fresh);
  return fresh;
}

function appendText(m: Message, text: string): void {
  const had = typeof m.content === 'string' ? m.content : '';
  m.content = had === '' ? text : `${had}\n${text}`;
}

function reasoningText(item: Extract<InputItem, { type: 'reasoning' }>): string {
  const content = (item.content ?? []).map((c) => c.text).join('\n');
  return content !== '' ? content : (item.summary ?? []).map((c) => c.text).join('\n');
}

/** One item into the chat messages so far. */
function addItem(out: Message[], item: InputItem): void {
  switch (item.type) {
    case 'message':
      if (item.role === 'assistant') appendText(assistantFor(out), textOf(item.content));
      else out.push({ role: item.role, content: inputContent(item.content) });
      return;
    case 'function_call': {
      const m = assistantFor(out);
      m.tool_calls = [...(m.tool_calls ?? []), { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } }];
      return;
    }
    case 'function_call_output':
      out.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : textOf(item.output) });
      return;
    case 'reasoning': {
      const text = reasoningText(item);
      if (text !== '') assistantFor(out).reasoning_content = text;
      return;
    }
  }
}

/** The chat messages of the items, after `instructions` as the system message. */
export function chatMessages(instructions: string | null | undefined, items: readonly InputItem[]): Message[] {
  const out: Message[] = [];
  if (instructions !== undefined && instructions !== null) out.push({ role: 'system', content: instructions });
  for (const item of items) addItem(out, item);
  // An assistant message with neither text nor calls (reasoning alone) says nothing but its reasoning.
  for (const m of out) if (m.role === 'assistant' && m.content === null && !m.tool_calls?.length) m.content = '';
  return out;
}

function responseFormat(f: TextFormat | null | undefined): ChatCompletionBody['response_format'] {
  if (!f || f.type !== 'json_schema') return f;
  return { type: 'json_schema', json_schema: { name: f.name, description: f.description, schema: f.schema } };
}

/** The chat request of a Responses request whose full item list (stored history first) is `items`. */
export function toChatBody(b: Body, items: readonly InputItem[]): ChatCompletionBody {
  const choice = b.tool_choice;
  return {
    model: b.model,
    messages: chatMessages(b.instructions, items),
    max_tokens: b.max_output_tokens,
    temperature: b.temperature,
    top_p: b.top_p,
    top_k: b.top_k,
    min_p: b.min_p,
    seed: b.seed,
    stop: b.stop,
    presence_penalty: b.presence_penalty,
    frequency_penalty: b.frequency_penalty,
    repeat_penalty: b.repeat_penalty,
    repeat_last_n: b.repeat_last_n,
    stream: b.stream,
    response_format: responseFormat(b.text?.format),
    tools: b.tools?.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    tool_choice: choice && typeof choice === 'object' ? { type: 'function', function: { name: choice.name } } : choice,
    parallel_tool_calls: b.parallel_tool_calls,
    reasoning_effort: b.reasoning?.effort,
  };
}
