// What the soak's clients send: valid requests through the official `openai` client (streamed and
// not, some abandoned mid-stream) and hostile ones through raw fetch (oversized, malformed JSON,
// invalid fields, and the structured output of soak-structured.ts: hostile grammars, schemas and
// tools, and heavy ones within the bounds), each with the outcomes a healthy server may give it.
// Anything else (a 500, a broken stream, a reset connection, a timeout) is unexpected.
import OpenAI from 'openai';
import { int, pick, type Outcome, type RequestContext } from './soak-context.js';
import { STRUCTURED_KINDS, sendStructured, type StructuredKind } from './soak-structured.js';

export const SOAK_KINDS = ['chat-stream', 'chat', 'completion', 'disconnect', 'oversized', 'malformed', 'bad-field', 'probe', ...STRUCTURED_KINDS] as const;
export type SoakKind = (typeof SOAK_KINDS)[number];

/**
 * The outcomes a healthy server may give each kind (429: the queue was full). A hostile
 * structured request's '400' also means the OpenAI error shape, `param` naming its field and a
 * one-line message (soak-structured.ts's judge400).
 */
export const ALLOWED: Record<SoakKind, readonly Outcome[]> = {
  'chat-stream': ['200', '429'],
  chat: ['200', '429'],
  completion: ['200', '429'],
  disconnect: ['aborted', '200', '429'],
  oversized: ['413'],
  malformed: ['400'],
  'bad-field': ['400'],
  probe: ['200'],
  'hostile-grammar': ['400'],
  'hostile-schema': ['400'],
  'hostile-tools': ['400'],
  'heavy-grammar': ['200', '429'],
};

const PROMPTS = ['Tell me about lighthouses.', 'Count to ten.', 'Write a haiku about rain.', 'Why is the sky blue?', 'Hello!'];

const MALFORMED = ['{"messages": [', '{messages: []}', '[1, 2', '{"model": "x",}', '', 'null', '"just a string"', '{"messages":[{"role":"user","content":"hi"}]'];

function badFields(model: string): unknown[] {
  const user = [{ role: 'user', content: 'hi' }];
  return [
    { model },
    { model, messages: 'hi' },
    { model, messages: [] },
    { model, messages: [{ role: 'wizard', content: 'hi' }] },
    { model, messages: user, temperature: 'hot' },
    { model, messages: user, max_tokens: -5 },
    { model, messages: user, max_tokens: 1.5 },
    { model, messages: user, max_tokens: 2 ** 25 },
    { model, messages: user, top_k: 2 ** 25 },
    { model, messages: user, top_p: 2 },
    { model, messages: user, n: 9 },
    { model, messages: user, stop: ['a', 'b', 'c', 'd', 'e'] },
    { model, messages: user, stream: 'yes' },
    { model, messages: user, logprobs: true, top_logprobs: 21 },
    { model, messages: user, no_such_field: 1 },
  ];
}

/** How a request ended, and for the structured kinds which variant it was (see soak-structured.ts). */
export interface Sent {
  outcome: Outcome;
  /** The variant's name. */
  variant?: string;
  /** The variant with its random parts, streaming and endpoint. */
  label?: string;
}

/** Sends one request of `kind` and says how it ended. Never throws. */
export async function sendRequest(kind: SoakKind, c: RequestContext): Promise<Sent> {
  const timeout = AbortSignal.timeout(c.timeoutMs);
  const signal = AbortSignal.any([timeout, c.stop]);
  const which: Omit<Sent, 'outcome'> = {};
  const note = (variant: string, label: string): void => void Object.assign(which, { variant, label });
  try {
    const outcome = isStructured(kind) ? await sendStructured(kind, c, signal, note) : await SEND[kind](c, signal);
    // The openai client ends an aborted stream quietly, as if it were complete.
    return { outcome: timeout.aborted ? 'timeout' : outcome, ...which };
  } catch (err) {
    return { outcome: classify(err, timeout), ...which };
  }
}

const isStructured = (kind: SoakKind): kind is StructuredKind => (STRUCTURED_KINDS as readonly string[]).includes(kind);

function classify(err: unknown, timeout: AbortSignal): Outcome {
  if (timeout.aborted) return 'timeout';
  if (err instanceof OpenAI.APIUserAbortError || (err instanceof Error && err.name === 'AbortError')) return 'aborted';
  if (err instanceof OpenAI.APIConnectionTimeoutError) return 'timeout';
  if (err instanceof OpenAI.APIConnectionError) return 'network-error';
  if (err instanceof OpenAI.APIError) return err.status === undefined ? 'stream-error' : String(err.status);
  if (err instanceof TypeError) return 'network-error';
  return 'stream-error';
}

type Sender = (c: RequestContext, signal: AbortSignal) => Promise<Outcome>;

const messages = (c: RequestContext): OpenAI.Chat.ChatCompletionMessageParam[] => [{ role: 'user', content: pick(c.random, PROMPTS) }];
const sampling = (c: RequestContext): { temperature: number; seed: number } => ({ temperature: c.random() < 0.5 ? 0 : 0.8, seed: int(c.random, 0, 1e6) });

/** Reads a stream to its end; a stream without its final usage chunk was cut short. */
/** A streamed answer ends with its usage chunk only when asked for it (OpenAI's shape): the soak asks, and judges the stream by it. */
const INCLUDE_USAGE = { include_usage: true };

async function drain(stream: AsyncIterable<{ usage?: unknown }>): Promise<Outcome> {
  let usage = false;
  for await (const chunk of stream) if (chunk.usage) usage = true;
  return usage ? '200' : 'stream-error';
}

async function raw(c: RequestContext, signal: AbortSignal, body: string | Buffer): Promise<Outcome> {
  const res = await fetch(`${c.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });
  await res.arrayBuffer();
  return String(res.status);
}

const SEND: Record<Exclude<SoakKind, StructuredKind>, Sender> = {
  'chat-stream': async (c, signal) => {
    const body = { model: c.model, messages: messages(c), max_tokens: int(c.random, 1, 16), stream: true as const, stream_options: INCLUDE_USAGE, ...sampling(c) };
    return drain(await c.client.chat.completions.create(body, { signal }));
  },
  chat: async (c, signal) => {
    const r = await c.client.chat.completions.create({ model: c.model, messages: messages(c), max_tokens: int(c.random, 1, 16), ...sampling(c) }, { signal });
    return r.choices.length === 1 ? '200' : 'stream-error';
  },
  completion: async (c, signal) => {
    const body = { model: c.model, prompt: pick(c.random, PROMPTS), max_tokens: int(c.random, 1, 16), ...sampling(c) };
    if (c.random() < 0.5) return drain(await c.client.completions.create({ ...body, stream: true, stream_options: INCLUDE_USAGE }, { signal }));
    const r = await c.client.completions.create(body, { signal });
    return r.choices.length === 1 ? '200' : 'stream-error';
  },
  disconnect: async (c, signal) => {
    // Leaves after 0–3 chunks, or before any answer (possibly while queued).
    const leave = new AbortController();
    const chunks = int(c.random, 0, 3);
    const timer = chunks === 0 ? setTimeout(() => leave.abort(), int(c.random, 0, 30)) : undefined;
    try {
      const body = { model: c.model, messages: messages(c), max_tokens: 64, stream: true as const, temperature: 0 };
      const stream = await c.client.chat.completions.create(body, { signal: AbortSignal.any([signal, leave.signal]) });
      let seen = 0;
      for await (const _chunk of stream) if (++seen >= chunks && chunks > 0) leave.abort();
      return leave.signal.aborted ? 'aborted' : '200';
    } finally {
      clearTimeout(timer);
    }
  },
  oversized: (c, signal) => {
    const content = 'x'.repeat(int(c.random, 1_100_000, 3_000_000));
    return raw(c, signal, JSON.stringify({ model: c.model, messages: [{ role: 'user', content }] }));
  },
  malformed: (c, signal) => raw(c, signal, pick(c.random, MALFORMED)),
  'bad-field': (c, signal) => raw(c, signal, JSON.stringify(pick(c.random, badFields(c.model)))),
  probe: async (c, signal) => {
    const res = await fetch(`${c.url}${pick(c.random, ['/health', '/metrics', '/v1/models', '/v1/bmoe/status'])}`, { signal });
    await res.arrayBuffer();
    return String(res.status);
  },
};
