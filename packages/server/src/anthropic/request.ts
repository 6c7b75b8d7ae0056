// An Anthropic Messages request → the chat completion request the server already serves: a port
// of llama.cpp's server_chat_convert_anthropic_to_oai (tools/server/server-chat.cpp). Its rules:
// `system` (a string, or its text blocks joined) is the first message, its Claude Code billing
// header's per-request stamp blanked (normalize_anthropic_billing_header) so the prefix cache gets
// past it; in a message, text blocks stay text parts, thinking blocks become reasoning_content,
// tool_use blocks become tool_calls (input as JSON text), tool_result blocks become tool messages
// (a block list's text joined; with images, its text and image parts); image blocks become
// image_url parts (a base64 source as its data URL); a message left with nothing is dropped; tools become function
// tools (input_schema their parameters); tool_choice auto/any → 'auto'/'required';
// stop_sequences → stop; thinking enabled/disabled → the template's reasoning on/off, enabled's
// budget_tokens the reasoning budget (thinking_budget_tokens). Beyond
// llama.cpp: output_config.format (a JSON schema) is chat's response_format json_schema.
// Where this differs from llama.cpp: tool messages come before the text of the user message that
// carries them (Anthropic puts tool_result blocks first; llama.cpp emitted the text first), a
// { type: 'tool', name } choice forces that tool (llama.cpp: any tool), 'none' is honoured,
// disable_parallel_tool_use is parallel_tool_calls false, and documents are refused by the schema.
import type { ImageRef } from '../images.js';
import type { MessageBody } from '../request-fields.js';
import type { ChatCompletionBody } from '../schemas.js';
import type { AnthropicMessage, ContentBlock, CountTokensBody, ImageSource, MessagesBody } from './schema.js';

type ToolResult = Extract<ContentBlock, { type: 'tool_result' }>;
type Part = Extract<NonNullable<MessageBody['content']>, readonly unknown[]>[number];

const BILLING_HEADER = 'x-anthropic-billing-header:';
const CCH_LENGTH = 5;

/**
 * normalize_anthropic_billing_header: Claude Code's system prompt may open with
 * `x-anthropic-billing-header: ...; cch=a5145;` whose 5-character stamp changes every request and
 * would stop the KV cache's prefix reuse there; it is written as `fffff`. Any other text is kept.
 */
export function normalizeBillingHeader(text: string): string {
  if (!text.startsWith(BILLING_HEADER)) return text;
  const at = text.indexOf('cch=', BILLING_HEADER.length);
  if (at < 0) return text;
  const from = at + 4;
  if (from + CCH_LENGTH < text.length && text[from + CCH_LENGTH] === ';') return text.slice(0, from) + 'f'.repeat(CCH_LENGTH) + text.slice(from + CCH_LENGTH);
  return text;
}

function systemMessage(system: MessagesBody['system']): MessageBody | null {
  if (system === undefined || system === null) return null;
  const text = typeof system === 'string' ? normalizeBillingHeader(system) : system.map((b) => normalizeBillingHeader(b.text)).join('');
  return { role: 'system', content: text };
}

/** An image source as the URL the chat path reads (images.ts): a base64 source is its data URL, as llama.cpp writes it. */
export function sourceUrl(source: ImageSource): string {
  return source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.type === 'url' ? source.url : '';
}

const imagePart = (source: ImageSource): Part => ({ type: 'image_url', image_url: { url: sourceUrl(source) } });

/** A tool_result's content: its text blocks joined, as llama.cpp; with images, text and image parts. */
function toolResultContent(content: ToolResult['content']): MessageBody['content'] {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!content.some((b) => b.type === 'image')) return content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return content.flatMap((b): Part[] => (b.type === 'text' ? [{ type: 'text', text: b.text }] : b.type === 'image' ? [imagePart(b.source)] : []));
}

/** The request's images in order, each with the field it came in, for images.ts to read. */
export function imageRefs(b: MessagesBody | CountTokensBody): ImageRef[] {
  const refs: ImageRef[] = [];
  b.messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((block, j) => {
      const at = `messages[${i}].content[${j}]`;
      if (block.type === 'image') refs.push({ url: sourceUrl(block.source), param: `${at}.source` });
      if (block.type !== 'tool_result' || !Array.isArray(block.content)) return;
      block.content.forEach((c, k) => {
        if (c.type === 'image') refs.push({ url: sourceUrl(c.source), param: `${at}.content[${k}].source` });
      });
    });
  });
  return refs;
}

/** One Anthropic message → its chat messages: the tool results, then the message itself (when anything is left). */
function convertMessage(m: AnthropicMessage): MessageBody[] {
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  const parts: Part[] = [];
  const calls: NonNullable<MessageBody['tool_calls']> = [];
  const results: MessageBody[] = [];
  let reasoning = '';
  for (const b of m.content) {
    if (b.type === 'text') parts.push({ type: 'text', text: b.text });
    else if (b.type === 'image') parts.push(imagePart(b.source));
    else if (b.type === 'thinking') reasoning += b.thinking;
    else if (b.type === 'tool_use') calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } });
    else if (b.type === 'tool_result') results.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultContent(b.content) });
  }
  const out = results;
  if (parts.length > 0 || calls.length > 0 || reasoning !== '') {
    const msg: MessageBody = { role: m.role, content: parts.length > 0 ? parts : '' };
    if (calls.length > 0) msg.tool_calls = calls;
    if (reasoning !== '') msg.reasoning_content = reasoning;
    out.push(msg);
  }
  return out;
}

/** The chat request fields that shape the prompt: messages, tools, tool_choice, reasoning. */
function promptFields(b: MessagesBody | CountTokensBody): Pick<ChatCompletionBody, 'messages' | 'tools' | 'tool_choice' | 'parallel_tool_calls' | 'chat_template_kwargs' | 'response_format' | 'model'> {
  const system = systemMessage(b.system);
  const messages = [...(system ? [system] : []), ...b.messages.flatMap(convertMessage)];
  const out: ReturnType<typeof promptFields> = { messages, model: b.model };
  if (b.tools?.length) {
    out.tools = b.tools.map((t) => ({
      type: 'function' as const,
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.input_schema },
    }));
  }
  const choice = b.tool_choice;
  if (choice) {
    out.tool_choice = choice.type === 'any' ? 'required' : choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type;
    if (choice.type !== 'none' && choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  }
  const think = b.thinking?.type;
  if (think === 'enabled' || think === 'disabled') out.chat_template_kwargs = { enable_thinking: think === 'enabled' };
  const format = b.output_config?.format;
  if (format) out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  return out;
}

/** The chat completion body a Messages request stands for. */
export function toChatBody(b: MessagesBody): ChatCompletionBody {
  const out: ChatCompletionBody = { ...promptFields(b), max_tokens: b.max_tokens, stream: b.stream };
  // As llama-server: enabled thinking's budget_tokens is the reasoning budget (0 = none).
  if (b.thinking?.type === 'enabled') out.reasoning_budget_tokens = b.thinking.budget_tokens;
  if (b.stop_sequences?.length) out.stop = b.stop_sequences;
  if (b.temperature !== undefined && b.temperature !== null) out.temperature = b.temperature;
  if (b.top_p !== undefined && b.top_p !== null) out.top_p = b.top_p;
  if (b.top_k !== undefined && b.top_k !== null) out.top_k = b.top_k;
  return out;
}

/** The chat completion body a count_tokens request stands for (what its prompt would be). */
export function toCountBody(b: CountTokensBody): ChatCompletionBody {
  return promptFields(b);
}
