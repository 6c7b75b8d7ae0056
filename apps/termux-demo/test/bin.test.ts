// `bmoe-demo` as a user runs it (the built dist/bin.js): the models listing, the O_DIRECT probe,
// an empty models folder, and one-line errors.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, FIXTURE_DIR, PKG_DIR } from './fixtures.js';

const BIN = join(PKG_DIR, 'dist', 'bin.js');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bmoeDemo(args: string[], onStdout?: (text: string, kill: () => void) => void, env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const childEnv = { ...process.env, ...env };
    if (!('BMOE_API_KEY' in env)) delete childEnv.BMOE_API_KEY;
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
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

/**
 * A GET as a browser sends it after a page's DNS name was rebound to this machine: to 127.0.0.1,
 * with the page's name in Host.
 */
function getAs(url: string, host: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { ...headers, host } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject).end();
  });
}

/** Runs `bmoe-demo` on an empty folder, hands its printed address to `check`, then stops it. */
async function withDemo(args: string[], env: NodeJS.ProcessEnv, check: (printed: string) => Promise<void>): Promise<Result> {
  let failure: unknown = null;
  let started = false;
  const r = await bmoeDemo(
    ['--models', empty, '--port', '0', ...args],
    (out, kill) => {
      const m = /open (http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(out);
      if (!m?.[1] || started) return;
      started = true;
      void check(m[1])
        .catch((err: unknown) => (failure = err))
        .finally(kill);
    },
    env,
  );
  if (failure) throw failure;
  expect(started, r.stderr).toBe(true);
  return r;
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

  it('models: a model in a folder of its own gets the projector beside it; one in the folder of several models does not', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bmoe-demo-mmproj-'));
    try {
      await copyFile(fixture('tiny-gpt-oss'), join(dir, 'a.gguf'));
      await copyFile(fixture('tiny-qwen3moe'), join(dir, 'b.gguf'));
      await writeFile(join(dir, 'mmproj-F16.gguf'), '');
      await mkdir(join(dir, 'vision'));
      await copyFile(fixture('tiny-gpt-oss'), join(dir, 'vision', 'v.gguf'));
      await writeFile(join(dir, 'vision', 'mmproj-F16.gguf'), '');
      const r = await bmoeDemo(['models', '--models', dir]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/: 3 model\(s\);/);
      expect(r.stdout).toMatch(/^ {2}a\.gguf {2}5 MiB {2}resident {2}-t \d -c 4096 --mmproj none$/m);
      expect(r.stdout).toContain(`  vision/v.gguf  5 MiB  resident  -t `);
      expect(r.stdout).toContain(` --mmproj ${join(dir, 'vision', 'mmproj-F16.gguf')}\n`);
      expect(r.stdout).toMatch(/^ {2}mmproj-F16\.gguf: not used, the folder holds several models \(put a vision model and its mmproj in a folder of their own inside it\)$/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
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

  it('refuses a foreign Host (DNS rebinding) with 403 on the page, the picker API and the model API', async () => {
    const r = await withDemo([], {}, async (printed) => {
      const url = new URL(printed);
      for (const path of ['/', '/api/state', '/v1/models', '/health']) {
        const foreign = await getAs(new URL(path, url).href, `rebound.example:${url.port}`);
        expect(foreign.status, path).toBe(403);
        expect(JSON.parse(foreign.body)).toMatchObject({ error: { code: 'host_not_allowed', message: expect.stringMatching(/^the Host 'rebound\.example:\d+' is not one of/) } });
        expect((await getAs(new URL(path, url).href, `localhost:${url.port}`)).status, path).not.toBe(403);
      }
    });
    expect(r.code, r.stderr).toBe(0);
  });

  it('answers the names given with --allowed-hosts', async () => {
    const r = await withDemo(['--allowed-hosts', 'phone.lan, other.lan'], {}, async (printed) => {
      const url = new URL(printed);
      expect((await getAs(new URL('/api/state', url).href, `phone.lan:${url.port}`)).status).toBe(200);
      expect((await getAs(new URL('/api/state', url).href, 'rebound.example')).status).toBe(403);
    });
    expect(r.code, r.stderr).toBe(0);
  });

  it.each([
    ['--api-key', ['--api-key', 'sekret'], {}],
    ['BMOE_API_KEY', [], { BMOE_API_KEY: 'sekret' }],
  ])('with %s, /api, /v1 and /metrics need the key; the page, and /health (status only), do not', async (_how, args, env) => {
    const r = await withDemo(args, env, async (printed) => {
      // The printed address carries the key in its fragment, for the page to pick up.
      expect(printed).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#key=sekret$/);
      const url = new URL(printed);
      const get = (path: string, headers: Record<string, string> = {}) => fetch(new URL(path, url), { headers });
      const bearer = { authorization: 'Bearer sekret' };
      for (const path of ['/api/state', '/api/models', '/v1/models', '/metrics']) {
        const none = await get(path);
        expect(none.status, path).toBe(401);
        expect(((await none.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
        expect((await get(path, { authorization: 'Bearer guess' })).status, path).toBe(401);
      }
      expect((await get('/api/state', bearer)).status).toBe(200);
      expect((await get('/v1/models', bearer)).status).toBe(503); // no model in the folder
      expect((await get('/')).status).toBe(200);
      const health = await get('/health');
      expect(health.status).toBe(503);
      const text = await health.text();
      expect(JSON.parse(text)).toEqual({ status: 'empty' });
      expect(text).not.toContain(empty);
    });
    expect(r.code, r.stderr).toBe(0);
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
