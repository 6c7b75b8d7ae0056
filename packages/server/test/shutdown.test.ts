// Issue 28: stopping must take a bounded time, also while the model is loading. close() waits for a
// load at most the shutdown grace (a load that never ends is stood in through the internal loader
// argument), and `bmoe serve` ends on SIGTERM within the grace + 3 s even when native work is stuck
// on a worker thread (there process.exit() itself would wait): child processes with a time limit.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Model } from '@bmoe/engine';
import { gv, rewriteGguf } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SHUTDOWN_GRACE_MS } from '../src/index.js';
import { createServerWithLoader } from '../src/server.js';
import { BMOE_BIN, fixture, native, runCli, sleep, type CliResult } from './helpers.js';

/** Resolves with `p`'s value, or with 'timed out' after `ms`: a hang fails the test instead of holding it. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function health(url: string): Promise<{ status: number; body: unknown; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/health`);
  return { status: res.status, body: await res.json(), ms: performance.now() - t0 };
}

/** A load that never ends, or ends when the test says so. */
function heldLoad(): { load: () => Promise<Model>; finish: (m: Model) => void } {
  let finish: (m: Model) => void = () => undefined;
  const pending = new Promise<Model>((resolve) => (finish = resolve));
  return { load: () => pending, finish: (m) => finish(m) };
}

/** Enough of a Model for the server's lifecycle: it is closed, never generated with. */
function fakeModel(): { model: Model; close: ReturnType<typeof vi.fn>; createSession: ReturnType<typeof vi.fn> } {
  const close = vi.fn(async () => undefined);
  const createSession = vi.fn(() => ({}));
  return { model: { close, createSession } as unknown as Model, close, createSession };
}

describe('close() while the model is loading', () => {
  it('waits for a load that never ends at most the grace; /health answers loading meanwhile', async () => {
    const server = await createServerWithLoader({ model: 'never.gguf', port: 0, shutdownGraceMs: 500 }, heldLoad().load);
    const url = await server.listen();
    for (let i = 0; i < 5; i++) expect(await health(url)).toMatchObject({ status: 503, body: { status: 'loading' } });
    const t0 = performance.now();
    expect(await within(server.close(), 5000)).toBeUndefined();
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(450);
    expect(ms).toBeLessThan(2000);
    await expect(server.ready).rejects.toThrow(/closed while the model was still loading \(stopped waiting after 500 ms\)/);
    expect(server.state).toBe('closed');
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  it('closes the model of a load that ends after close() stopped waiting', async () => {
    const held = heldLoad();
    const server = await createServerWithLoader({ model: 'late.gguf', port: 0, shutdownGraceMs: 100 }, held.load);
    await server.listen();
    expect(await within(server.close(), 5000)).toBeUndefined();
    const late = fakeModel();
    held.finish(late.model);
    await vi.waitFor(() => expect(late.close).toHaveBeenCalledTimes(1));
    expect(late.createSession).not.toHaveBeenCalled();
    expect(server.model).toBeNull();
  });

  it('waits for a load that ends within the grace, then frees its model', async () => {
    const held = heldLoad();
    const server = await createServerWithLoader({ model: 'soon.gguf', port: 0, shutdownGraceMs: 5000 }, held.load);
    await server.listen();
    const done = fakeModel();
    setTimeout(() => held.finish(done.model), 200);
    const t0 = performance.now();
    expect(await within(server.close(), 5000)).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(done.close).toHaveBeenCalledTimes(1);
    await expect(server.ready).rejects.toThrow(/closed while the model was loading/);
  });
});

// ---- bmoe serve, as a child process ----------------------------------------------------------------

/** The grace `bmoe serve` uses, plus the 3 s after it when it ends itself. */
const DEADLINE_MS = DEFAULT_SHUTDOWN_GRACE_MS + 3000;
/** Each child is SIGKILLed after this: the old code never ended. */
const CHILD_LIMIT_MS = DEADLINE_MS + 15_000;

interface Serving {
  /** The URL once `bmoe serve` listens. */
  readonly url: Promise<string>;
  readonly exit: Promise<CliResult & { at: number }>;
  kill(signal: NodeJS.Signals): number;
}

/** `bmoe serve MODEL --port 0` with extra node arguments and environment, SIGKILLed after CHILD_LIMIT_MS. */
function serveChild(model: string, nodeArgs: readonly string[] = [], env: NodeJS.ProcessEnv = {}): Serving {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, BMOE_DEBUG: '', ...env };
  delete childEnv.BMOE_API_KEY;
  const child = spawn(process.execPath, [...nodeArgs, BMOE_BIN, 'serve', model, '--port', '0', '-t', '2'], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
  let stdout = '';
  let stderr = '';
  let listening: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (listening = resolve));
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    const m = /listening on (http:\/\/\S+) /.exec(stderr);
    if (m?.[1]) listening(m[1]);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS);
  const exit = new Promise<CliResult & { at: number }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, at: performance.now() });
    });
  });
  return {
    url: Promise.race([url, exit.then((r) => Promise.reject(new Error(`bmoe serve exited early (${r.code ?? r.signal}): ${r.stderr}`)))]),
    exit,
    kill(signal) {
      child.kill(signal);
      return performance.now();
    },
  };
}

/** /health answers `loading`, quickly, again and again: the load hangs and the server still answers. */
async function expectLoading(url: string, forMs: number): Promise<void> {
  const until = performance.now() + forMs;
  while (performance.now() < until) {
    const h = await health(url);
    expect(h).toMatchObject({ status: 503, body: { status: 'loading' } });
    expect(h.ms).toBeLessThan(1000);
    await sleep(100);
  }
}

/** A copy of `src` whose chat template is `template`. */
async function withChatTemplate(src: string, out: string, template: string): Promise<void> {
  await rewriteGguf(src, out, { 'tokenizer.chat_template': gv.str(template) });
}

/**
 * A preload for the child: once the server listens, libuv's one worker thread (UV_THREADPOOL_SIZE=1)
 * is taken by a computation of many minutes, so the model load queued behind it never runs, as
 * with a native load that hangs. Nothing in the product knows of it.
 */
const STUCK_WORKER = `
import { pbkdf2 } from 'node:crypto';
import { Server } from 'node:net';
const listen = Server.prototype.listen;
let taken = false;
Server.prototype.listen = function (...args) {
  if (!taken) pbkdf2('stuck', 'salt', 2 ** 31 - 1, 64, 'sha512', () => undefined);
  taken = true;
  return listen.apply(this, args);
};
`;

describe('bmoe serve --help', () => {
  it('says how a stop ends, and what a forced end looks like', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`for up to ${DEFAULT_SHUTDOWN_GRACE_MS / 1000} s (then aborts it) and exits 0`);
    expect(r.stdout).toMatch(/not ended 3 s after that .* or on a second SIGTERM or Ctrl-C/s);
    expect(r.stdout).toMatch(/exit\s+status 143 after SIGTERM, 130 after Ctrl-C/);
  });
});

describe.runIf(native)('bmoe serve ends within a bounded time on SIGTERM while the model is loading', () => {
  let dir: string;
  let preload: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-shutdown-'));
    preload = join(dir, 'stuck-worker.mjs');
    await writeFile(preload, STUCK_WORKER);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const stuck = (): Serving => serveChild(fixture(), ['--import', preload], { UV_THREADPOOL_SIZE: '1' });

  it('a load stuck behind native work: SIGTERM ends it at grace + 3 s with one line, by SIGTERM', async () => {
    const s = stuck();
    const url = await s.url;
    await expectLoading(url, 1000);
    const t0 = s.kill('SIGTERM');
    const r = await s.exit;
    const ms = r.at - t0;
    expect(ms).toBeLessThan(DEADLINE_MS + 3000);
    expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 500);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: null, signal: 'SIGTERM' });
    expect(r.stderr).toMatch(/bmoe serve: SIGTERM: stopping; the model is still loading\n/);
    expect(r.stderr).toMatch(new RegExp(`\\nbmoe serve: native work \\(a model load or a generation\\) still running ${DEADLINE_MS / 1000} s after SIGTERM; exiting now\\n$`));
  });

  it('a second signal ends it at once', async () => {
    const s = stuck();
    const url = await s.url;
    await expectLoading(url, 300);
    s.kill('SIGTERM');
    await sleep(300);
    const t0 = s.kill('SIGINT');
    const r = await s.exit;
    expect(r.at - t0).toBeLessThan(1500);
    expect(r.stderr).toMatch(/bmoe serve: second SIGINT; exiting now\n$/);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: null, signal: 'SIGINT' });
  });

  it('a GGUF whose chat template loops at load fails the load within its time limit, in one line (it held serve in loading)', async () => {
    const model = join(dir, 'looping-template.gguf');
    await withChatTemplate(fixture(), model, '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}');
    const s = serveChild(model);
    await s.url;
    // The template's parse and llama.cpp's probes of it at load get 10 s together.
    const ended = await within(s.exit, 16000);
    if (ended === 'timed out') {
      s.kill('SIGKILL');
      throw new Error('bmoe serve still loading 16 s after start');
    }
    expect(ended.code).toBe(1);
    const errors = ended.stderr.split('\n').filter((l) => l.startsWith('bmoe: error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/chat template: took longer than its time limit of 10 s$/);
  });
});
