// The HTTP side of `bmoe-bench serve`: one streamed chat completion timed from the client (node:http,
// so each chunk's arrival is seen as it comes), the model id, and llama-server's slot save/restore
// calls. Both servers are spoken to the same way.
import { request } from 'node:http';
import { carriesToken, splitSse, type ChatMessage, type StreamChunk } from './serve-bench-script.js';

export interface ChatSample {
  /** Request sent (or `t0`) → first chunk carrying generated text. */
  ttftMs: number;
  /** Request sent (or `t0`) → the stream's end. */
  totalMs: number;
  /** Arrival of each chunk carrying generated text, ms after the request was sent (or `t0`). */
  tokenTimesMs: number[];
  /** The answer's content, as a client appends it to the conversation. */
  content: string;
  promptTokens: number | null;
  cachedTokens: number | null;
  completionTokens: number | null;
}

const REQUEST_TIMEOUT_MS = 30 * 60_000;

/**
 * One HTTP request on a connection of its own (`Connection: close`): a pooled keep-alive socket
 * the server has just closed (llama-server's cpp-httplib closes idle ones) would fail a request
 * as `other side closed`, and a new loopback connection costs both servers the same. `onText`
 * sees the body as it arrives; the whole body is returned too.
 */
export function httpRequest(method: 'GET' | 'POST', target: string, body?: unknown, onText?: (text: string) => void): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(target, {
      method,
      agent: false,
      headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${target}: no answer for ${REQUEST_TIMEOUT_MS / 60_000} min`)));
    req.on('error', (err) => reject(new Error(`${method} ${target}: ${err.message}`)));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        try {
          onText?.(d);
        } catch (err) {
          req.destroy();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on('error', (err) => reject(new Error(`${method} ${target}: ${err.message}`)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.end(payload);
  });
}

/** The first model /v1/models lists. */
export async function modelId(url: string): Promise<string> {
  const res = await httpRequest('GET', `${url}/v1/models`);
  const id = res.status === 200 ? (JSON.parse(res.text) as { data?: { id?: string }[] }).data?.[0]?.id : undefined;
  if (!id) throw new Error(`${url}/v1/models: HTTP ${res.status}, no model listed`);
  return id;
}

/**
 * One streamed, greedy chat completion with the usage chunk, timed from `t0` (default: when it is
 * sent; given, it counts what came before, as llama-server's slot restore).
 */
export async function streamChat(url: string, model: string, messages: readonly ChatMessage[], maxTokens: number, t0 = performance.now()): Promise<ChatSample> {
  const sample: ChatSample = { ttftMs: -1, totalMs: 0, tokenTimesMs: [], content: '', promptTokens: null, cachedTokens: null, completionTokens: null };
  let buffer = '';
  let done = false;
  const body = { model, messages, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
  const res = await httpRequest('POST', `${url}/v1/chat/completions`, body, (text) => {
    const at = performance.now() - t0;
    const { data, rest } = splitSse(buffer + text);
    buffer = rest;
    for (const payload of data) {
      if (payload.trim() === '[DONE]') {
        done = true;
        continue;
      }
      const chunk = JSON.parse(payload) as StreamChunk;
      if (chunk.error !== undefined) throw new Error(`${url}: error in the stream: ${JSON.stringify(chunk.error).slice(0, 300)}`);
      readChunk(sample, chunk, at);
    }
  });
  if (res.status !== 200) throw new Error(`${url}/v1/chat/completions: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
  if (!done) throw new Error(`${url}: the stream ended without [DONE]`);
  sample.totalMs = performance.now() - t0;
  if (sample.ttftMs < 0) sample.ttftMs = sample.totalMs;
  return sample;
}

function readChunk(sample: ChatSample, chunk: StreamChunk, at: number): void {
  if (carriesToken(chunk)) {
    if (sample.ttftMs < 0) sample.ttftMs = at;
    sample.tokenTimesMs.push(at);
  }
  sample.content += chunk.choices?.[0]?.delta?.content ?? '';
  const u = chunk.usage;
  if (u) {
    sample.promptTokens = u.prompt_tokens ?? null;
    sample.completionTokens = u.completion_tokens ?? null;
    sample.cachedTokens = u.prompt_tokens_details?.cached_tokens ?? null;
  }
}

/** llama-server's slot save or restore (`POST /slots/ID?action=…`, `--slot-save-path`): its answer's `timings` ms and token count. */
export async function llamaSlotAction(url: string, action: 'save' | 'restore', filename: string): Promise<{ ms: number | null; tokens: number | null }> {
  const res = await httpRequest('POST', `${url}/slots/0?action=${action}`, { filename });
  if (res.status !== 200) throw new Error(`llama-server slot ${action}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
  const body = JSON.parse(res.text) as { n_saved?: number; n_restored?: number; timings?: { save_ms?: number; restore_ms?: number } };
  return {
    ms: (action === 'save' ? body.timings?.save_ms : body.timings?.restore_ms) ?? null,
    tokens: (action === 'save' ? body.n_saved : body.n_restored) ?? null,
  };
}
