// Test helpers: a real server on loopback with the real `openai` client, a /metrics scraper, and
// the built `bmoe` executable as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { inject } from 'vitest';
import { createServer, type BmoeServer, type ServerOptions } from '../src/index.js';

export const BMOE_BIN = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));

/** The tiny-qwen3moe fixture made by global-setup. */
export function fixture(): string {
  return inject('fixture');
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
