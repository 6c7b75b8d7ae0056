// `bmoe pull` end to end, as a user runs it, against a Hugging Face Hub on loopback (fake-hub.ts:
// the tree API, resolve redirects, Range, ETag / X-Linked-Etag). HF_ENDPOINT points at it; no real
// network is used.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeHub, type FakeHub } from './fake-hub.js';
import { lines, runCli, type CliResult } from './helpers.js';

const TOKEN = 'hf_test_token_1234';
const blob = (n: number, seed: number): Buffer => Buffer.from(randomBytes(n).map((b) => b ^ seed));

let hub: FakeHub;
let dir: string;
const tiny = blob(300_000, 1);
const shards = [blob(120_000, 2), blob(90_000, 3), blob(70_000, 4)];
const multi = { q4: blob(40_000, 5), q8: blob(50_000, 6), xl: blob(30_000, 7) };

beforeAll(async () => {
  hub = await startFakeHub({
    'acme/tiny-GGUF': { files: [{ path: 'README.md', data: Buffer.from('# tiny\n') }, { path: 'tiny-Q8_0.gguf', data: tiny }] },
    'acme/split-GGUF': {
      files: shards.map((data, i) => ({ path: `Q4_K_M/split-Q4_K_M-0000${i + 1}-of-00003.gguf`, data })),
    },
    'acme/multi-GGUF': {
      files: [
        { path: 'Multi-Q4_K_M.gguf', data: multi.q4 },
        { path: 'Multi-Q8_0.gguf', data: multi.q8 },
        { path: 'Multi-UD-Q4_K_XL.gguf', data: multi.xl },
        { path: 'mmproj-Multi-F16.gguf', data: blob(1000, 8) },
      ],
    },
    'acme/ambiguous-GGUF': {
      files: [
        { path: 'Amb-Q4_K_M.gguf', data: blob(1000, 9) },
        { path: 'Amb-UD-Q4_K_M.gguf', data: blob(1000, 10) },
      ],
    },
    'acme/bad-GGUF': { files: [{ path: 'bad-Q8_0.gguf', data: blob(64_000, 11), served: blob(64_000, 12) }] },
    'acme/gated-GGUF': { token: TOKEN, files: [{ path: 'gated-Q8_0.gguf', data: blob(20_000, 13) }] },
  });
});

afterAll(async () => {
  await hub?.close();
});

beforeEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'bmoe-pull-'));
  hub.requests.length = 0;
  hub.pageSize = 1000;
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function pull(ref: string, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runCli(['pull', ref], { env: { HF_ENDPOINT: hub.url, HF_TOKEN: '', BMOE_MODELS_DIR: dir, ...env } });
}

/** The one `bmoe: error:` line of a failed command (and that there is exactly one). */
function errorLine(r: CliResult): string {
  const errors = lines(r.stderr).filter((l) => l.startsWith('bmoe: error:'));
  expect(errors, r.stderr).toHaveLength(1);
  return errors[0]!;
}

const cdnRequests = (): typeof hub.requests => hub.requests.filter((q) => q.path.startsWith('/cdn/'));

describe('bmoe pull', () => {
  it('downloads a fresh model through the resolve redirect, checks its sha256 and prints its path', async () => {
    const r = await pull('hf:acme/tiny-GGUF:Q8_0');
    expect(r.code, r.stderr).toBe(0);
    const path = r.stdout.trim();
    expect(path).toBe(join(dir, 'acme+tiny-GGUF+tiny-Q8_0.gguf'));
    expect((await readFile(path)).equals(tiny)).toBe(true);
    expect(r.stderr).toMatch(/tiny-Q8_0\.gguf: 292\.97 KiB, sha256 verified/);
    expect(hub.requests.some((q) => q.path.startsWith('/api/models/acme/tiny-GGUF/tree/main'))).toBe(true);
    expect(hub.requests.some((q) => q.path === '/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf')).toBe(true);
    expect(cdnRequests()).toHaveLength(1);
    expect((await readdir(dir)).filter((f) => f.includes('.partial'))).toEqual([]);

    // Present and verified: a second pull fetches nothing.
    hub.requests.length = 0;
    const again = await pull('hf:acme/tiny-GGUF:q8_0');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(path);
    expect(again.stderr).toMatch(/already here/);
    expect(cdnRequests()).toHaveLength(0);
  });

  it('resumes an interrupted download with a Range request and ends with the right bytes', async () => {
    hub.cutNext('acme/tiny-GGUF', 'tiny-Q8_0.gguf', 100_000);
    const first = await pull('hf:acme/tiny-GGUF:Q8_0');
    expect(first.code).toBe(1);
    expect(errorLine(first)).toMatch(/tiny-Q8_0\.gguf: the download stopped at \d+ of 300000 bytes .*run the same command again to resume$/);
    const partial = join(dir, 'acme+tiny-GGUF+tiny-Q8_0.gguf.partial');
    const kept = (await stat(partial)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(100_000);
    expect((await readFile(partial)).equals(tiny.subarray(0, kept))).toBe(true);
    const firstEtag = cdnRequests()[0]!;
    expect(firstEtag.headers.range).toBeUndefined();

    hub.requests.length = 0;
    const second = await pull('hf:acme/tiny-GGUF:Q8_0');
    expect(second.code, second.stderr).toBe(0);
    const [get] = cdnRequests();
    expect(get!.headers.range).toBe(`bytes=${kept}-`);
    expect(get!.headers['if-range']).toMatch(/^"[0-9a-f]{64}"$/);
    expect(second.stderr).toMatch(/resumed at/);
    expect((await readFile(second.stdout.trim())).equals(tiny)).toBe(true);
    expect(existsSync(partial)).toBe(false);
  });

  it('a file changed on the server since the cut comes back whole (If-Range), not spliced', async () => {
    const url = `${hub.url}/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf`;
    hub.cutNext('acme/tiny-GGUF', 'tiny-Q8_0.gguf', 50_000);
    const cut = await pull(url);
    expect(cut.code).toBe(1);
    expect(errorLine(cut)).toMatch(/the download stopped at [1-9]\d* of 300000 bytes/);
    const file = hub.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q8_0.gguf')!;
    const changed = blob(tiny.length, 99);
    file.data = changed;
    hub.requests.length = 0;
    try {
      const r = await pull(url);
      expect(r.code, r.stderr).toBe(0);
      const [get] = cdnRequests();
      expect(get!.headers.range).toMatch(/^bytes=\d+-$/);
      expect(get!.headers['if-range']).toBeDefined();
      expect((await readFile(r.stdout.trim())).equals(changed)).toBe(true);
    } finally {
      file.data = tiny;
    }
  });

  it('pulls every shard of a split model (paginated tree, folder) and prints the first shard', async () => {
    hub.pageSize = 2;
    const r = await pull('hf:acme/split-GGUF:q4_k_m');
    expect(r.code, r.stderr).toBe(0);
    const first = r.stdout.trim();
    expect(basename(first)).toBe('acme+split-GGUF+Q4_K_M+split-Q4_K_M-00001-of-00003.gguf');
    for (const [i, data] of shards.entries()) {
      const p = join(dir, `acme+split-GGUF+Q4_K_M+split-Q4_K_M-0000${i + 1}-of-00003.gguf`);
      expect((await readFile(p)).equals(data)).toBe(true);
    }
    expect(hub.requests.filter((q) => q.path.startsWith('/api/')).length).toBeGreaterThan(1);
    // One shard named by path brings the others too.
    await rm(join(dir, 'acme+split-GGUF+Q4_K_M+split-Q4_K_M-00002-of-00003.gguf'));
    hub.requests.length = 0;
    const byPath = await pull('hf:acme/split-GGUF/Q4_K_M/split-Q4_K_M-00001-of-00003.gguf');
    expect(byPath.code, byPath.stderr).toBe(0);
    expect(byPath.stdout.trim()).toBe(first);
    expect(cdnRequests().map((q) => q.path)).toEqual(['/cdn/acme/split-GGUF/Q4_K_M/split-Q4_K_M-00002-of-00003.gguf']);
  });

  it('refuses a wrong checksum and keeps the partial file', async () => {
    const r = await pull('hf:acme/bad-GGUF');
    expect(r.code).toBe(1);
    expect(errorLine(r)).toMatch(/bad-Q8_0\.gguf: checksum mismatch: the published sha256 is [0-9a-f]{64}, the downloaded bytes have [0-9a-f]{64}; refused \(kept at .*\.partial\)$/);
    expect(existsSync(join(dir, 'acme+bad-GGUF+bad-Q8_0.gguf'))).toBe(false);
    expect((await stat(join(dir, 'acme+bad-GGUF+bad-Q8_0.gguf.partial'))).size).toBe(64_000);

    // Fixed on the server: the next pull checks the kept file again, finds it wrong, fetches afresh.
    const file = hub.repos.get('acme/bad-GGUF')!.files[0]!;
    const served = file.served;
    delete file.served;
    try {
      const again = await pull('hf:acme/bad-GGUF');
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/the kept partial file does not match its checksum; downloading it again/);
      expect((await readFile(again.stdout.trim())).equals(file.data)).toBe(true);
    } finally {
      file.served = served;
    }
  });

  it('401 without a token is one line asking for HF_TOKEN; with it, the token reaches the hub only', async () => {
    const r = await pull('hf:acme/gated-GGUF');
    expect(r.code).toBe(1);
    expect(errorLine(r)).toMatch(/^bmoe: error: hf:acme\/gated-GGUF needs a token: set HF_TOKEN .*\(401 from /);

    const wrong = await pull('hf:acme/gated-GGUF', { HF_TOKEN: 'hf_wrong' });
    expect(errorLine(wrong)).toMatch(/HF_TOKEN was not accepted/);

    hub.requests.length = 0;
    const ok = await pull('hf:acme/gated-GGUF', { HF_TOKEN: TOKEN });
    expect(ok.code, ok.stderr).toBe(0);
    expect(hub.requests.find((q) => q.path.startsWith('/api/'))!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(hub.requests.find((q) => q.path.includes('/resolve/'))!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    // The redirect goes to the CDN, another origin (a signed URL on the real hub): no token there.
    expect(cdnRequests()).toHaveLength(1);
    expect(cdnRequests()[0]!.headers.authorization).toBeUndefined();
  });

  it('404s are one line naming the repository or the file', async () => {
    const repo = await pull('hf:acme/missing-GGUF');
    expect(repo.code).toBe(1);
    expect(errorLine(repo)).toMatch(/^bmoe: error: hf:acme\/missing-GGUF: no such repository at http:\/\/127\.0\.0\.1:\d+ \(404 from http:\/\/127\.0\.0\.1:\d+\/api\/models\/acme\/missing-GGUF\/tree\/main/);
    const file = await pull('hf:acme/tiny-GGUF/nope-Q2_K.gguf');
    expect(errorLine(file)).toMatch(/^bmoe: error: hf:acme\/tiny-GGUF\/nope-Q2_K\.gguf: no file nope-Q2_K\.gguf in the repository \(it has tiny-Q8_0\.gguf\)$/);
    const url = await pull(`${hub.url}/acme/tiny-GGUF/resolve/main/gone.gguf`);
    expect(errorLine(url)).toMatch(/gone\.gguf: not found \(404 from /);
  });

  it('a refused connection is one line', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await pull('hf:acme/tiny-GGUF', { HF_ENDPOINT: `http://127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(errorLine(r)).toMatch(new RegExp(`^bmoe: error: cannot fetch hf:acme/tiny-GGUF's file list at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
  });

  it('picks the quant case-insensitively and lists what exists when it is missing or ambiguous', async () => {
    const ud = await pull('hf:acme/multi-GGUF:ud-q4_k_xl');
    expect(ud.code, ud.stderr).toBe(0);
    expect((await readFile(ud.stdout.trim())).equals(multi.xl)).toBe(true);

    const def = await pull('hf:acme/multi-GGUF');
    expect(def.code, def.stderr).toBe(0);
    expect((await readFile(def.stdout.trim())).equals(multi.q4)).toBe(true);
    expect(def.stderr).toMatch(/no quant given: taking Q4_K_M \(the repository also has Q8_0, Q4_K_XL\)/);

    const missing = await pull('hf:acme/multi-GGUF:Q5_K_S');
    expect(errorLine(missing)).toBe('bmoe: error: hf:acme/multi-GGUF:Q5_K_S: no Q5_K_S GGUF in the repository; it has: Q4_K_M, Q8_0, Q4_K_XL');

    const amb = await pull('hf:acme/ambiguous-GGUF:q4_k_m');
    expect(errorLine(amb)).toBe(
      'bmoe: error: hf:acme/ambiguous-GGUF:q4_k_m: q4_k_m matches 2 models: Amb-Q4_K_M.gguf, Amb-UD-Q4_K_M.gguf; name one, e.g. hf:acme/ambiguous-GGUF/Amb-Q4_K_M.gguf',
    );
  });

  it('one download of a file at a time: a live holder refuses in one line, a dead one is taken over', async () => {
    const lock = join(dir, 'acme+tiny-GGUF+tiny-Q8_0.gguf.partial.lock');
    await writeFile(lock, `${process.pid}\n`);
    const busy = await pull('hf:acme/tiny-GGUF');
    expect(busy.code).toBe(1);
    expect(errorLine(busy)).toMatch(new RegExp(`tiny-Q8_0\\.gguf is being downloaded by another bmoe \\(pid ${process.pid}\\)`));
    await writeFile(lock, '4194303\n'); // above any pid_max: no such process
    const taken = await pull('hf:acme/tiny-GGUF');
    expect(taken.code, taken.stderr).toBe(0);
    expect(existsSync(lock)).toBe(false);
  });

  it('pulls a plain URL, checked against the X-Linked-Etag of its redirect', async () => {
    const r = await pull(`${hub.url}/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(join(dir, 'tiny-Q8_0.gguf'));
    expect((await readFile(r.stdout.trim())).equals(tiny)).toBe(true);
    expect(r.stderr).toMatch(/sha256 verified/);
  });
});
