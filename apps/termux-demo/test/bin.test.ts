// `bmoe-demo` as a user runs it (the built dist/bin.js): the models listing, the O_DIRECT probe,
// an empty models folder, and one-line errors.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_DIR, PKG_DIR } from './fixtures.js';

const BIN = join(PKG_DIR, 'dist', 'bin.js');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bmoeDemo(args: string[], onStdout?: (text: string, kill: () => void) => void): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      onStdout?.(stdout, () => child.kill('SIGTERM'));
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let empty: string;
beforeAll(async () => {
  empty = await mkdtemp(join(tmpdir(), 'bmoe-demo-empty-'));
});
afterAll(async () => {
  await rm(empty, { recursive: true, force: true });
});

describe('bmoe-demo', () => {
  it('models: lists the folder with the settings each GGUF would get', async () => {
    const r = await bmoeDemo(['models', '--models', FIXTURE_DIR]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^.*\.models: 2 model\(s\); RAM [\d.]+ GiB, \d+ cores, the demo may hold [\d.]+ GiB$/m);
    expect(r.stdout).toMatch(/^ {2}tiny-gpt-oss\.gguf {2}5 MiB {2}resident {2}-t \d -c 4096$/m);
    expect(r.stdout).toMatch(/^ {2}tiny-qwen3moe\.gguf {2}9 MiB {2}resident {2}-t \d -c 4096$/m);
    const json = await bmoeDemo(['models', '--models', FIXTURE_DIR, '--json']);
    const parsed = JSON.parse(json.stdout) as { models: Array<{ file: string; settings: { mode: string } }> };
    expect(parsed.models.map((m) => m.file)).toEqual(['tiny-gpt-oss.gguf', 'tiny-qwen3moe.gguf']);
  });

  it('probe: says whether O_DIRECT works in a folder and leaves nothing behind', async () => {
    const r = await bmoeDemo(['probe', empty, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const p = JSON.parse(r.stdout) as { odirect: boolean; fsType: string; detail: string };
    expect(p.odirect).toBe(true);
    expect(p.detail).toMatch(/^O_DIRECT works in .* \(\S+ on \S+\): experts are read straight from flash$/);
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(empty)).toEqual([]);
  });

  it('serves the page with an empty models folder, and /v1 answers 503 saying where to put a model', async () => {
    let url = '';
    let body: { error: { message: string } } | null = null;
    let state = '';
    let status = 0;
    const r = await bmoeDemo(['--models', empty, '--port', '0'], (out, kill) => {
      const m = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m?.[1] && !url) {
        url = m[1];
        void (async () => {
          try {
            state = ((await (await fetch(new URL('/api/state', url))).json()) as { state: string }).state;
            const res = await fetch(new URL('/v1/models', url));
            status = res.status;
            body = (await res.json()) as { error: { message: string } };
          } finally {
            kill();
          }
        })();
      }
    });
    expect(r.code, r.stderr).toBe(0);
    expect(state).toBe('empty');
    expect(status).toBe(503);
    expect(body!.error.message).toBe(`no model is loaded: put a GGUF in ${empty} and pick it in the page`);
    expect(r.stderr).toContain(`no GGUF in ${empty} yet`);
  });

  it('says in one line when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await bmoeDemo(['--models', empty, '--port', String(port)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`bmoe-demo: error: 127.0.0.1:${port} is already in use (another bmoe-demo? pick another with --port)\n`);
    } finally {
      blocker.close();
    }
  });

  it('rejects a bad port as a usage error', async () => {
    const r = await bmoeDemo(['--port', '70000']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("option '--port <n>' argument '70000' is invalid. must be an integer from 0 to 65535");
  });
});
