// `serve-load`: K concurrent clients, each sending N streamed chat completions one after another
// with the real `openai` client, against @bmoe/server started here on a model (127.0.0.1, any free
// port) or against a running server (--url). Reports requests/s, generated tokens/s, and p50/p95
// of time to first token and of total latency, as each client saw them.
import { percentile } from '@bmoe/engine/metrics';
import type { LoadOptions } from '@bmoe/engine';
import { InvalidArgumentError, type Command } from 'commander';
import OpenAI from 'openai';
import { engineFlag, threadsFlag } from './flags.js';

export interface ServeLoadOptions {
  /** A running server's base URL (`http://127.0.0.1:8080`, without /v1). Exclusive with `model`. */
  url?: string;
  /** A GGUF to serve here for the run (in this process, on 127.0.0.1 and a free port). */
  model?: string;
  /** How to load `model`. Default { threads: 2 }. */
  load?: LoadOptions;
  /** Concurrent clients. Default 4. */
  clients?: number;
  /** Requests per client, sent one after another. Default 4. */
  requests?: number;
  /** max_tokens of each request (greedy). Default 32. */
  maxTokens?: number;
  /** The user message; each request appends ` #client.request` so prompts differ. */
  prompt?: string;
  /** Bearer key for a server started with --api-key. */
  apiKey?: string;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
}

export interface LatencyStats {
  p50Ms: number;
  p95Ms: number;
}

export interface ServeLoadResult {
  url: string;
  model: string;
  clients: number;
  requestsPerClient: number;
  maxTokens: number;
  /** Requests answered completely. */
  completed: number;
  /** Requests that failed (HTTP error, broken stream); the first error's message is in `firstError`. */
  failed: number;
  firstError: string | null;
  /** From the first request sent to the last answer done (the warm-up request excluded). */
  wallSeconds: number;
  requestsPerSecond: number;
  /** Generated tokens (usage.completion_tokens) of all completed requests per wall second. */
  tokensPerSecond: number;
  /** Request sent → first generated token, queueing included. */
  ttft: LatencyStats;
  /** Request sent → last chunk. */
  latency: LatencyStats;
}

const DEFAULT_PROMPT = 'Write a short story about a lighthouse keeper.';

interface Sample {
  ttftMs: number;
  totalMs: number;
  tokens: number;
}

export async function runServeLoad(opts: ServeLoadOptions): Promise<ServeLoadResult> {
  if ((opts.url === undefined) === (opts.model === undefined)) throw new Error('serve-load needs exactly one of --model (serve it here) or --url (a running server)');
  const clients = opts.clients ?? 4;
  const perClient = opts.requests ?? 4;
  const maxTokens = opts.maxTokens ?? 32;
  const prompt = opts.prompt ?? DEFAULT_PROMPT;
  const log = opts.log ?? (() => undefined);

  let close: () => Promise<void> = async () => undefined;
  let url = opts.url?.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (opts.model !== undefined) {
    const { createServer } = await import('@bmoe/server');
    // Room for every client in the queue: this measures serving, not refusals.
    const server = await createServer({ model: opts.model, port: 0, load: opts.load ?? { threads: 2 }, maxQueue: Math.max(8, clients), apiKey: opts.apiKey });
    url = await server.listen();
    close = () => server.close();
    log(`serve-load: serving ${opts.model} at ${url}, loading …`);
    try {
      await server.ready;
    } catch (err) {
      await close();
      throw err;
    }
  }
  const base = url as string;
  try {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: opts.apiKey ?? 'unused', maxRetries: 0, timeout: 600_000 });
    const model = (await client.models.list()).data[0]?.id;
    if (!model) throw new Error(`${base}/v1/models lists no model`);
    // One request first: lazy initialisation and cold caches are not what concurrency costs.
    await oneRequest(client, model, `${prompt} #warm-up`, maxTokens);
    log(`serve-load: ${clients} clients × ${perClient} requests, max_tokens ${maxTokens}, model ${model}`);

    const samples: Sample[] = [];
    let failed = 0;
    let firstError: string | null = null;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let r = 0; r < perClient; r++) {
          try {
            samples.push(await oneRequest(client, model, `${prompt} #${c + 1}.${r + 1}`, maxTokens));
          } catch (err) {
            failed++;
            firstError ??= err instanceof Error ? err.message : String(err);
          }
        }
      }),
    );
    const wallSeconds = (performance.now() - t0) / 1000;
    const stats = (pick: (s: Sample) => number): LatencyStats => {
      const sorted = samples.map(pick).sort((a, b) => a - b);
      return { p50Ms: percentile(sorted, 50), p95Ms: percentile(sorted, 95) };
    };
    return {
      url: base,
      model,
      clients,
      requestsPerClient: perClient,
      maxTokens,
      completed: samples.length,
      failed,
      firstError,
      wallSeconds,
      requestsPerSecond: samples.length / wallSeconds,
      tokensPerSecond: samples.reduce((a, s) => a + s.tokens, 0) / wallSeconds,
      ttft: stats((s) => s.ttftMs),
      latency: stats((s) => s.totalMs),
    };
  } finally {
    await close();
  }
}

/** One streamed, greedy chat completion, timed from the client's side. */
async function oneRequest(client: OpenAI, model: string, content: string, maxTokens: number): Promise<Sample> {
  const t0 = performance.now();
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    // The usage (generated tokens) comes in its own last chunk only when asked, as OpenAI sends it.
    stream_options: { include_usage: true },
  });
  let ttftMs: number | null = null;
  let tokens = 0;
  for await (const chunk of stream) {
    // A chunk with a generated token carries `bmoe.token`; other servers: the first content.
    const hasToken = (chunk as { bmoe?: { token?: unknown } }).bmoe?.token !== undefined || Boolean(chunk.choices[0]?.delta.content);
    if (ttftMs === null && hasToken) ttftMs = performance.now() - t0;
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  const totalMs = performance.now() - t0;
  return { ttftMs: ttftMs ?? totalMs, totalMs, tokens };
}

const ms = (x: number): string => `${x.toFixed(1)} ms`;

export function serveLoadReport(r: ServeLoadResult): string {
  return [
    `serve-load: ${r.clients} concurrent clients × ${r.requestsPerClient} requests, max_tokens ${r.maxTokens}, streamed, greedy (model ${r.model} at ${r.url})`,
    `requests: ${r.completed} completed, ${r.failed} failed in ${r.wallSeconds.toFixed(2)} s: ${r.requestsPerSecond.toFixed(2)} requests/s, ${r.tokensPerSecond.toFixed(1)} generated tokens/s`,
    `time to first token: p50 ${ms(r.ttft.p50Ms)}, p95 ${ms(r.ttft.p95Ms)}`,
    `total latency:       p50 ${ms(r.latency.p50Ms)}, p95 ${ms(r.latency.p95Ms)}`,
    ...(r.firstError ? [`first error: ${r.firstError}`] : []),
  ].join('\n');
}

const count = (what: string, min: number) => (v: string): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`${what} must be an integer ≥ ${min}, got ${v}`);
  return n;
};

interface ServeLoadFlags {
  model?: string;
  url?: string;
  clients: number;
  requests: number;
  maxTokens: number;
  prompt?: string;
  threads: number;
  moeStream?: boolean;
  cacheMb?: number | 'auto';
  apiKey?: string;
  json?: boolean;
}

/** Adds `serve-load` to a command tree (`bmoe-bench serve-load`). */
export function registerServeLoad(program: Command): void {
  program
    .command('serve-load')
    .description('K concurrent openai clients against bmoe serve: requests/s, p50/p95 time to first token and total latency')
    .option('--model <file>', 'GGUF to serve here for the run (127.0.0.1, a free port)')
    .option('--url <url>', 'a running server instead (e.g. http://127.0.0.1:8080)')
    .option('--clients <K>', 'concurrent clients', count('--clients', 1), 4)
    .option('--requests <N>', 'requests per client, one after another', count('--requests', 1), 4)
    .option('--max-tokens <N>', 'max_tokens per request (greedy)', count('--max-tokens', 1), 32)
    .option('--prompt <text>', 'user message (each request appends #client.request)')
    .addOption(threadsFlag(2, 'compute threads of the server started with --model'))
    .option('--moe-stream', 'stream experts in the server started with --model')
    .addOption(engineFlag('stream.cacheMb', { help: 'expert cache of the server started with --model (with --moe-stream)', default: null }))
    .option('--api-key <key>', 'Bearer key (for a server with --api-key)')
    .option('--json', 'print the result as JSON')
    .action(async (f: ServeLoadFlags) => {
      if (f.cacheMb !== undefined && !f.moeStream) throw new InvalidArgumentError('--cache-mb requires --moe-stream');
      const load: LoadOptions = { threads: f.threads, ...(f.moeStream ? { stream: { moeStream: true, ...(f.cacheMb !== undefined ? { cacheMb: f.cacheMb } : {}) } } : {}) };
      const r = await runServeLoad({
        url: f.url,
        model: f.model,
        load,
        clients: f.clients,
        requests: f.requests,
        maxTokens: f.maxTokens,
        prompt: f.prompt,
        apiKey: f.apiKey,
        log: (l) => process.stderr.write(`${l}\n`),
      });
      process.stdout.write(`${f.json ? JSON.stringify(r, null, 2) : serveLoadReport(r)}\n`);
      if (r.failed > 0) process.exitCode = 1;
    });
}
