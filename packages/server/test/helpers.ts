// Test helpers: a real server on loopback with the real `openai` client, a /metrics scraper, the
// built `bmoe` executable as a child process, a fetch that reaches loopback by a foreign name (DNS
// rebinding) and a /health prober.
import { spawn, type ChildProcess } from 'node:child_process';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { isNativeAvailable } from '@bmoe/engine';
import OpenAI from 'openai';
import { afterAll, beforeAll, inject } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { createServer, type BmoeServer, type ServerOptions } from '../src/index.js';

/** The gate of the suites that need the native addon: they skip without it, except under CI where this throws. */
export const native = await requireNative('the native addon', () => isNativeAvailable());

export const BMOE_BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

/** The tiny-qwen3moe fixture made by global-setup. */
export function fixture(): string {
  return inject('fixture');
}

/** The tiny-gpt-oss fixture made by global-setup. */
export function gptOssFixture(): string {
  return inject('gptOssFixture');
}

/** Two compute threads everywhere (the CI machine has two cores; the CLI runs use the same). */
export const THREADS = 2;
/** Expert streaming through a cache smaller than the experts, so the streaming counters move. */
export const STREAM_CACHE_MB = 4;
export const STREAM_FLAGS = ['-t', String(THREADS), '--moe-stream', '--cache-mb', String(STREAM_CACHE_MB)];

export interface Started {
  server: BmoeServer;
  url: string;
  client: OpenAI;
}

/** A server on an ephemeral loopback port with its model loaded, and an `openai` client for it. */
export async function startServer(opts: Partial<ServerOptions> = {}): Promise<Started> {
  const server = await createServer({ model: fixture(), port: 0, load: { threads: THREADS }, ...opts });
  const url = await server.listen();
  await server.ready;
  return { server, url, client: clientFor(url, opts.apiKey ?? 'unused') };
}

/**
 * One server for the enclosing describe: started (model loaded) before its tests, closed after
 * them. The object returned is filled in by the beforeAll hook: read it in tests and later hooks.
 */
export function serverForSuite(opts: Partial<ServerOptions> = {}): Started {
  const s = {} as Started;
  beforeAll(async () => {
    Object.assign(s, await startServer(opts));
  });
  afterAll(async () => {
    await (s.server as BmoeServer | undefined)?.close();
  });
  return s;
}

/** No retries: the tests look at each answer, including 429 and 503. */
export function clientFor(url: string, apiKey = 'unused'): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 30_000 });
}

/** `/metrics` as sample name (with labels, as printed) → value. */
export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`, { headers });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** A sample's value, 0 when absent (a labelled counter never incremented is not printed). */
export function sample(m: Map<string, number>, name: string): number {
  return m.get(name) ?? 0;
}

export async function postJson(url: string, path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: unknown }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: the test shows the text
  }
  return { status: res.status, headers: res.headers, json };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** SIGKILL after this long. Default 60 s. */
  timeoutMs?: number;
  onStderr?: (text: string, child: ChildProcess) => void;
}

/** Runs the built `bmoe` executable. */
export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, BMOE_DEBUG: '' };
    delete env.BMOE_API_KEY;
    const child = spawn(process.execPath, [BMOE_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      opts.onStderr?.(stderr, child);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What `bmoe run` prints on stdout for a generated text (a newline is added when missing). */
export function asPrinted(text: string): string {
  return text === '' || text.endsWith('\n') ? text : `${text}\n`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/**
 * A fetch that resolves `name` to 127.0.0.1, as a browser does once a page's DNS name has been
 * rebound to this machine: the request reaches the loopback server with `Host: name:port`.
 * (Node's own fetch cannot send a foreign Host; this goes through node:http with its own lookup.)
 */
export function reboundFetch(name: string): typeof fetch {
  const lookup = (host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void): void => {
    if (host !== name) return void dnsLookup(host, opts, cb as never);
    const addr: LookupAddress = { address: '127.0.0.1', family: 4 };
    if (opts.all) cb(null, [addr]);
    else cb(null, addr.address, addr.family);
  };
  return async (input, init) => {
    const req = new Request(input, init);
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    return new Promise<Response>((resolve, reject) => {
      const out = request(req.url, { method: req.method, headers: Object.fromEntries(req.headers), lookup: lookup as never, signal: req.signal }, (res) => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) headers.append(k, one);
        const status = res.statusCode ?? 502;
        const stream = status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        resolve(new Response(stream, { status, headers }));
      });
      out.on('error', reject);
      out.end(body);
    });
  };
}

export interface HealthProbe {
  /** Stops probing; resolves with the slowest /health answer seen (ms) and how many were answered. */
  stop(): Promise<{ maxMs: number; answered: number }>;
}

/**
 * Asks `/health` again and again, one at a time, timing each answer. The server runs in this
 * process, so a request that blocks the event loop shows as one slow /health answer.
 */
export function probeHealth(url: string): HealthProbe {
  let running = true;
  let maxMs = 0;
  let answered = 0;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const res = await fetch(`${url}/health`);
      await res.arrayBuffer();
      maxMs = Math.max(maxMs, performance.now() - t0);
      answered++;
      await sleep(2);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { maxMs, answered };
    },
  };
}

/** Request fields the OpenAI SDKs send that change nothing in the answer here (accepted without effect). */
export const SDK_HINTS = {
  user: 'u-1',
  safety_identifier: 's-1',
  metadata: { app: 'test' },
  store: false,
  service_tier: 'auto',
  prompt_cache_key: 'k',
} as const;
