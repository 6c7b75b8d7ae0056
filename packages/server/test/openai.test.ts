// The OpenAI API as the real `openai` client meets it, on a server streaming experts from the
// tiny fixture through a cache smaller than the experts: answers, streamed chunks with per-token
// metrics, identity with `bmoe run`, concurrency, disconnects, /metrics, and the error paths.
import { stat } from 'node:fs/promises';
import { runSummarySchema, tokenMetricsSchema, type TokenMetrics } from '@bmoe/engine';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BmoeResult, BmoeStatus, ChatCompletionChunk } from '../src/index.js';
import {
  STREAM_CACHE_MB,
  STREAM_FLAGS,
  THREADS,
  asPrinted,
  fixture,
  native,
  postJson,
  runCli,
  sample,
  scrape,
  serverForSuite,
  waitFor,
} from './helpers.js';


/** The `bmoe` object the server adds to OpenAI's shapes. */
function bmoeOf(x: unknown): BmoeResult {
  return (x as { bmoe: BmoeResult }).bmoe;
}

const user = (content: string): OpenAI.Chat.ChatCompletionMessageParam[] => [{ role: 'user', content }];

/**
 * Streams a chat completion with the client (usage asked for); returns the text, the chunks, the
 * token records, the chunk with the finish reason (and the bmoe result) and the usage chunk (the last).
 */
async function streamChat(client: OpenAI, model: string, content: string, maxTokens: number, extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsStreaming> = {}) {
  const stream = await client.chat.completions.create({
    model,
    messages: user(content),
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true, include_metrics: true } as OpenAI.Chat.Completions.ChatCompletionStreamOptions,
    ...extra,
  });
  const chunks: ChatCompletionChunk[] = [];
  let text = '';
  for await (const c of stream) {
    const chunk = c as unknown as ChatCompletionChunk;
    chunks.push(chunk);
    text += chunk.choices[0]?.delta.content ?? '';
  }
  const tokens = chunks.flatMap((c) => (c.bmoe && 'token' in c.bmoe ? [c.bmoe.token] : []));
  const finish = chunks.find((c) => c.choices[0]?.finish_reason);
  return { text, chunks, tokens, finish, last: chunks[chunks.length - 1] };
}

describe.skipIf(!native)('@bmoe/server with the openai client (expert streaming, cache smaller than the experts)', () => {
  const s = serverForSuite({ load: { threads: THREADS, stream: { moeStream: true, cacheMb: STREAM_CACHE_MB } }, bodyLimitBytes: 64 * 1024 });
  let model: string;
  beforeAll(() => {
    model = s.server.modelId;
  });

  it('answers a non-streaming chat completion with usage and the bmoe summary', async () => {
    const r = await s.client.chat.completions.create({ model, messages: user('Hello'), max_tokens: 12, temperature: 0 });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe(model);
    expect(r.choices[0]?.message.role).toBe('assistant');
    expect(r.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(r.choices[0]?.finish_reason).toBe('length');
    expect(r.usage?.completion_tokens).toBe(12);
    expect(r.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage?.total_tokens).toBe((r.usage?.prompt_tokens ?? 0) + 12);
    const b = bmoeOf(r);
    expect(runSummarySchema.parse(b.summary).tokens).toBe(12);
    expect(b.generation.tokens).toBe(12);
    // The model streams its experts: the moe-stream and moe-cache numbers are there, as `bmoe run` prints them.
    expect(b.stream?.readMiB).toBeGreaterThan(0);
    expect(b.cache?.expertMisses).toBeGreaterThan(0);
    expect(b.cache?.cacheBudgetMiB).toBe(STREAM_CACHE_MB);
    // Route-ahead is auto by default when streaming (it may read ahead): its moe-ahead numbers and line are there too,
    // counting predictions exactly where route-ahead was in force.
    expect(b.lines.map((l) => l.split(':')[0])).toEqual(['generation', 'moe-stream', 'moe-cache', 'moe-ahead']);
    expect(b.ahead!.aheadRouted > 0).toBe(b.stream!.aheadOnPercent! > 0);
    // Overlap and route-ahead auto: the moe-stream numbers and line say what they did over the
    // reply's 11 decodes (the probe's medians and how many decodes each is of, once a round ended:
    // the streamer's probe spans requests), and the probes started since load.
    expect(b.stream).toMatchObject({ overlapMode: 'auto', overlappedPercent: expect.any(Number), routeAheadMode: 'auto', aheadOnPercent: expect.any(Number) });
    expect(b.lines[1]).toMatch(
      /, overlap auto: on for [\d.]+ % of tokens, route-ahead auto: on for [\d.]+ % \(probe: serial ([\d.]+ ms over \d+|n\/a ms), overlap ([\d.]+ ms over \d+|n\/a ms), route-ahead ([\d.]+ ms over \d+|n\/a ms), overlap \+ route-ahead ([\d.]+ ms over \d+|n\/a ms); \d+ probes?, \d+ after a drift\)$/,
    );
    // The probes since the model was loaded, as the streamer counts them (the first at least).
    expect(b.stream!.probes).toBeGreaterThanOrEqual(1);
    expect(b.stream!.driftProbes).toBeLessThanOrEqual(b.stream!.probes! - 1);
    expect(b.timings.totalMs).toBeGreaterThanOrEqual(b.timings.ttftMs);
  });

  it('streams chat.completion.chunk events with per-token metrics, the summary, then the usage chunk and [DONE]', async () => {
    const whole = await s.client.chat.completions.create({ model, messages: user('Tell me about the sea'), max_tokens: 16, temperature: 0 });
    const r = await streamChat(s.client, model, 'Tell me about the sea', 16);
    expect(r.text).toBe(whole.choices[0]?.message.content);
    expect(r.chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(new Set(r.chunks.map((c) => c.id)).size).toBe(1);
    // Every chunk carrying generated text carries that token's metrics record.
    for (const c of r.chunks) if (c.choices[0]?.delta.content) expect(c.bmoe && 'token' in c.bmoe).toBe(true);
    expect(r.tokens).toHaveLength(16);
    r.tokens.forEach((t, i) => expect(tokenMetricsSchema.parse(t).tokenIndex).toBe(i));
    expect(r.finish?.choices[0]?.finish_reason).toBe('length');
    // OpenAI's include_usage: the usage in a last chunk of its own, without choices.
    expect(r.last?.choices).toEqual([]);
    // The same prompt again: the slot holds all of it but the last two tokens (OpenAI's cached_tokens;
    // evaluated again as one batch of several tokens: batch-invariant prompts).
    const prompt = whole.usage!.prompt_tokens;
    expect(r.last?.usage).toEqual({ ...whole.usage, prompt_tokens_details: { cached_tokens: prompt - 2 } });
    const b = bmoeOf(r.finish);
    expect(b.summary.tokens).toBe(16);
    expect(b.summary.expertMisses).toBe(r.tokens.slice(1).reduce((a, t) => a + t.expertMisses, 0));

    // On the wire: SSE `data:` lines, the last one `[DONE]`.
    const raw = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: user('Hi'), max_tokens: 3, temperature: 0, stream: true, stream_options: { include_usage: true } }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await raw.text()).split('\n\n').filter((e) => e.trim() !== '');
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
    const usage = JSON.parse(events.at(-2)!.slice(6)) as ChatCompletionChunk;
    expect(usage.usage?.completion_tokens).toBe(3);
    const final = JSON.parse(events.at(-3)!.slice(6)) as ChatCompletionChunk;
    expect(final.usage).toBeNull();
    expect(bmoeOf(final).summary.tokens).toBe(3);
  });

  it('gives the same greedy answer as `bmoe run` on the same prompt (chat and raw completions)', async () => {
    const prompt = 'The quick brown fox';
    const n = 24;
    const [chatRun, rawRun] = await Promise.all([
      runCli(['run', fixture(), '-p', prompt, '-n', String(n), '--chat', ...STREAM_FLAGS]),
      runCli(['run', fixture(), '-p', prompt, '-n', String(n), ...STREAM_FLAGS]),
    ]);
    expect(chatRun.code, chatRun.stderr).toBe(0);
    expect(rawRun.code, rawRun.stderr).toBe(0);

    const chat = await s.client.chat.completions.create({ model, messages: user(prompt), max_tokens: n, temperature: 0 });
    // `bmoe run` prints the generated text; a chat answer is that text read by the model's chat
    // format (llama.cpp's parser, as llama-server answers): here the same text, less the leading
    // whitespace the format puts before an answer.
    const runText = chatRun.stdout.trimStart();
    expect(runText.length).toBeGreaterThan(0);
    expect(asPrinted(chat.choices[0]?.message.content ?? '')).toBe(runText);
    const streamed = await streamChat(s.client, model, prompt, n);
    expect(asPrinted(streamed.text)).toBe(runText);

    const raw = await s.client.completions.create({ model, prompt, max_tokens: n, temperature: 0 });
    expect(raw.object).toBe('text_completion');
    expect(asPrinted(raw.choices[0]?.text ?? '')).toBe(rawRun.stdout);
    expect(bmoeOf(raw).summary.tokens).toBe(n);
    const rawStream = await s.client.completions.create({ model, prompt, max_tokens: n, temperature: 0, stream: true, stream_options: { include_metrics: true } as OpenAI.Chat.Completions.ChatCompletionStreamOptions });
    let rawText = '';
    let tokens = 0;
    for await (const c of rawStream) {
      rawText += c.choices[0]?.text ?? '';
      if ((c as unknown as { bmoe?: { token?: TokenMetrics } }).bmoe?.token) tokens++;
    }
    expect(asPrinted(rawText)).toBe(rawRun.stdout);
    expect(tokens).toBe(n);
  });

  it('serves 4 concurrent clients, each with its own complete answer (the one it gets alone)', async () => {
    const prompts = ['Hello', 'Write a poem', 'The quick brown fox', 'Tell me about the sky'];
    const n = 20;
    const alone: string[] = [];
    for (const p of prompts) {
      const r = await s.client.chat.completions.create({ model, messages: user(p), max_tokens: n, temperature: 0 });
      alone.push(r.choices[0]?.message.content ?? '');
    }
    const together = await Promise.all(prompts.map((p) => streamChat(s.client, model, p, n)));
    together.forEach((r, i) => {
      expect(r.text).toBe(alone[i]);
      expect(r.tokens).toHaveLength(n);
      expect(r.last?.usage?.completion_tokens).toBe(n);
    });
    // One at a time: the last one served waited at least for the whole generation of the first.
    const timings = together.map((r) => bmoeOf(r.finish).timings).sort((a, b) => a.queueMs - b.queueMs);
    const first = timings[0]!;
    expect(timings[3]!.queueMs).toBeGreaterThanOrEqual(first.totalMs - first.queueMs);
  });

  it('a client that disconnects mid-stream aborts its generation within a token and frees the turn', async () => {
    const before = await scrape(s.url);
    const maxTokens = 3000;
    const stream = await s.client.chat.completions.create({ model, messages: user('Hello'), max_tokens: maxTokens, temperature: 0, stream: true });
    let received = 0;
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content || (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content) received++;
      if (received === 3) break; // leaving the loop closes the connection
    }
    const left = performance.now();
    let after = before;
    await waitFor('the disconnect to be counted', async () => {
      after = await scrape(s.url);
      return sample(after, 'bmoe_requests_total{endpoint="/v1/chat/completions",outcome="disconnected"}') === 1;
    });
    const stoppedMs = performance.now() - left;
    // The outcome is counted once the native generation has returned: that is the abort latency.
    const generated = sample(after, 'bmoe_generated_tokens_total') - sample(before, 'bmoe_generated_tokens_total');
    const spt = sample(after, 'bmoe_wall_seconds_total') / Math.max(1, sample(after, 'bmoe_generated_tokens_total'));
    expect(generated).toBeGreaterThanOrEqual(3);
    expect(generated).toBeLessThan(maxTokens / 10);
    expect(stoppedMs / 1000).toBeLessThan(Math.max(1, (maxTokens - generated) * spt * 0.5));

    // The next request gets the model at once.
    const next = await s.client.chat.completions.create({ model, messages: user('Next'), max_tokens: 4, temperature: 0 });
    expect(next.usage?.completion_tokens).toBe(4);
    expect(bmoeOf(next).timings.queueMs).toBeLessThan(50);
    const settled = await scrape(s.url);
    expect(sample(settled, 'bmoe_generated_tokens_total') - sample(after, 'bmoe_generated_tokens_total')).toBe(4);
  });

  it('moves the /metrics counters by exactly what a request reports', async () => {
    const before = await scrape(s.url);
    const r = await streamChat(s.client, model, 'Count the stars', 10);
    const after = await scrape(s.url);
    const delta = (name: string): number => sample(after, name) - sample(before, name);
    const sum = (pick: (t: TokenMetrics) => number): number => r.tokens.reduce((a, t) => a + pick(t), 0);
    const b = bmoeOf(r.finish);

    expect(delta('bmoe_generated_tokens_total')).toBe(10);
    expect(delta('bmoe_read_bytes_total')).toBe(sum((t) => t.readBytes));
    expect(delta('bmoe_expert_hits_total')).toBe(sum((t) => t.expertHits));
    expect(delta('bmoe_expert_misses_total')).toBe(sum((t) => t.expertMisses));
    expect(delta('bmoe_expert_misses_total')).toBeGreaterThan(0);
    expect(delta('bmoe_wall_seconds_total')).toBeCloseTo(sum((t) => t.wallMs) / 1000, 9);
    expect(delta('bmoe_prompt_tokens_total')).toBe(b.summary.promptTokens);
    expect(sample(after, 'bmoe_cache_resident_bytes')).toBe(r.tokens.at(-1)?.cacheResidentBytes);
    expect(delta('bmoe_requests_total{endpoint="/v1/chat/completions",outcome="completed"}')).toBe(1);
    expect(delta('bmoe_request_duration_seconds_count{endpoint="/v1/chat/completions"}')).toBe(1);
    expect(delta('bmoe_time_to_first_token_seconds_count{endpoint="/v1/chat/completions"}')).toBe(1);
    expect(sample(after, 'bmoe_queue_depth')).toBe(0);
  });

  it('stops at a stop sequence without sending it, streamed or not', async () => {
    const full = await s.client.chat.completions.create({ model, messages: user('Hello'), max_tokens: 24, temperature: 0 });
    const text = full.choices[0]?.message.content ?? '';
    const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 3);
    const expected = text.slice(0, text.indexOf(stop));
    const cut = await s.client.chat.completions.create({ model, messages: user('Hello'), max_tokens: 24, temperature: 0, stop });
    expect(cut.choices[0]?.message.content).toBe(expected);
    expect(cut.choices[0]?.finish_reason).toBe('stop');
    const streamed = await streamChat(s.client, model, 'Hello', 24, { stop: [stop] });
    expect(streamed.text).toBe(expected);
    expect(streamed.finish?.choices[0]?.finish_reason).toBe('stop');
  });

  it('lists the model, reports health and status', async () => {
    const models = await s.client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([model]);
    expect((await s.client.models.retrieve(model)).id).toBe(model);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    const status = (await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as BmoeStatus;
    expect(status.status).toBe('ready');
    expect(status.model).toMatchObject({ id: model, path: fixture(), sizeBytes: (await stat(fixture())).size });
    expect(status.model.info?.architecture).toBe('qwen3moe');
    expect(status.stream?.options).toMatchObject({ moeStream: true, cacheMb: STREAM_CACHE_MB });
    expect(status.stream?.resolved?.budgetBytes).toBe(STREAM_CACHE_MB * 1024 * 1024);
    // Overlap and route-ahead are measured by default; the status says so, with what the streamer measured.
    expect(status.stream?.options).toMatchObject({ overlap: 'auto', routeAhead: 'auto' });
    expect(status.stream?.resolved).toMatchObject({ overlapMode: 'auto', overlap: expect.any(Boolean), routeAheadMode: 'auto', routeAhead: expect.any(Boolean) });
    expect(status.stream?.resolved?.probe.map((a) => [a.overlap, a.routeAhead])).toEqual([
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ]);
    expect(status).toMatchObject({ queueDepth: 0, maxQueue: 8, busy: false });
    expect(Object.keys(status.device).sort()).toEqual(['batteryTempC', 'cpuTempC', 'memAvailableBytes', 'memTotalBytes', 'rssBytes']);
  });

  it('answers errors with their status and an OpenAI-style body', async () => {
    const before = await scrape(s.url);
    // Malformed JSON → 400.
    const bad = await postJson(s.url, '/v1/chat/completions', '{"messages": [');
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ error: { message: expect.stringMatching(/malformed JSON/), type: 'invalid_request_error', param: null, code: 'invalid_json' } });

    // An invalid field → 400 naming it, raised by the client as BadRequestError.
    const invalid = await s.client.chat.completions.create({ model, messages: user('x'), temperature: 5 }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect(invalid).toMatchObject({ status: 400, param: 'temperature', type: 'invalid_request_error', code: 'invalid_value' });
    expect((invalid as Error).message).toMatch(/temperature.*must be a number from 0 to 2, got 5/);
    const missing = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ model }));
    expect(missing).toMatchObject({ status: 400, json: { error: { param: 'messages', code: 'missing_required_parameter' } } });
    const part = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }));
    expect(part).toMatchObject({ status: 400, json: { error: { param: 'messages[0].content[0].image_url.url', code: 'missing_required_parameter' } } });

    // A model name this server does not list is still served (the one model answers), but retrieving it is 404.
    const unknownRetrieve = await s.client.models.retrieve('gpt-4o').catch((e: unknown) => e);
    expect(unknownRetrieve).toBeInstanceOf(OpenAI.NotFoundError);

    // Prompt longer than the context → 400 context_length_exceeded.
    const long = await s.client.completions.create({ model, prompt: 'word '.repeat(5000), max_tokens: 1 }).catch((e: unknown) => e);
    expect(long).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'prompt' });

    // Body over the limit → 413.
    const big = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ model, messages: user('x'.repeat(70 * 1024)) }));
    expect(big).toMatchObject({ status: 413, json: { error: { code: 'request_too_large', type: 'invalid_request_error' } } });

    // Unknown endpoint under /v1 → 404 in the same shape.
    const nowhere = await postJson(s.url, '/v1/rerank', '{}');
    expect(nowhere).toMatchObject({ status: 404, json: { error: { code: 'unknown_url' } } });

    // None of these reached the model; each refused generation request is counted once.
    expect((await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as BmoeStatus).toMatchObject({ busy: false, queueDepth: 0 });
    const after = await scrape(s.url);
    const rejected = (endpoint: string): number =>
      sample(after, `bmoe_requests_total{endpoint="${endpoint}",outcome="rejected"}`) - sample(before, `bmoe_requests_total{endpoint="${endpoint}",outcome="rejected"}`);
    expect(rejected('/v1/chat/completions')).toBe(5);
    expect(rejected('/v1/completions')).toBe(1);
    expect(sample(after, 'bmoe_generated_tokens_total')).toBe(sample(before, 'bmoe_generated_tokens_total'));
  });
});
