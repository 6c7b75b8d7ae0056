// Local names of pulled files (issue 28): `hf:alice/m_x`'s `y-Q4_K_M.gguf` and `hf:alice/m`'s
// `x_y-Q4_K_M.gguf` were both `alice_m_x_y-Q4_K_M.gguf`, and offline `run hf:alice/m_x` ran the
// other repository's model. Now `owner+repo+path`; files under the older names are taken over only
// when the manifest says which repository's file is there.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resolveModelArg } from '../src/hub/index.js';
import { sha256, startFakeHub, type FakeHub } from './fake-hub.js';
import { runCli, type CliResult } from './helpers.js';

const A = Buffer.concat([Buffer.from('GGUF'), randomBytes(40_000)]); // alice/m_x's y-Q4_K_M.gguf
const B = Buffer.concat([Buffer.from('GGUF'), randomBytes(50_000)]); // alice/m's x_y-Q4_K_M.gguf
const OLD = 'alice_m_x_y-Q4_K_M.gguf'; // what the older naming called both

let hub: FakeHub;
let dir: string;

beforeAll(async () => {
  hub = await startFakeHub({
    'alice/m_x': { files: [{ path: 'y-Q4_K_M.gguf', data: A }] },
    'alice/m': { files: [{ path: 'x_y-Q4_K_M.gguf', data: B }] },
  });
});

afterAll(async () => {
  await hub?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'bmoe-pull-names-'));
  hub.requests.length = 0;
});

const env = (): NodeJS.ProcessEnv => ({ HF_ENDPOINT: hub.url, HF_TOKEN: '', BMOE_MODELS_DIR: dir });
const pull = (ref: string): Promise<CliResult> => runCli(['pull', ref], { env: env() });
/** What run, chat and serve do with a REF: a recorded one is used without asking the hub. */
const resolveLocal = (ref: string): Promise<string> => resolveModelArg(ref, { env: env(), log: () => undefined });
const cdnRequests = (): number => hub.requests.filter((q) => q.path.startsWith('/cdn/')).length;
const url = (repo: string, path: string): string => `${hub.url}/${repo}/resolve/main/${path}`;

/** The models folder as an older bmoe left it: `data` under the old name, recorded as `fromRepo`'s file. */
async function oldLayout(data: Buffer, fromRepo: string, fromPath: string, refs: string[]): Promise<void> {
  await writeFile(join(dir, OLD), data);
  const st = await stat(join(dir, OLD));
  const manifest = {
    version: 1,
    files: { [OLD]: { url: url(fromRepo, fromPath), sha256: sha256(data), size: st.size, mtimeMs: st.mtimeMs } },
    refs: Object.fromEntries(refs.map((r) => [r, [OLD]])),
  };
  await writeFile(join(dir, '.bmoe-pull.json'), JSON.stringify(manifest));
}

describe('local names of pulled files', () => {
  it('two repositories whose older names collide get two files, and each reference finds its own offline', async () => {
    const mx = await pull('hf:alice/m_x');
    expect(mx.code, mx.stderr).toBe(0);
    const m = await pull('hf:alice/m');
    expect(m.code, m.stderr).toBe(0);
    // The second pull must not have replaced the first one's file.
    expect((await readFile(mx.stdout.trim())).equals(A)).toBe(true);
    expect((await readFile(m.stdout.trim())).equals(B)).toBe(true);
    expect(mx.stdout.trim()).toBe(join(dir, 'alice+m_x+y-Q4_K_M.gguf'));
    expect(m.stdout.trim()).toBe(join(dir, 'alice+m+x_y-Q4_K_M.gguf'));

    hub.requests.length = 0;
    const local = await resolveLocal('hf:alice/m_x');
    expect(hub.requests).toEqual([]);
    expect((await readFile(local)).equals(A)).toBe(true);
    expect((await readFile(await resolveLocal('hf:alice/m'))).equals(B)).toBe(true);
  });

  it("a file under the older name whose record says it is that repository's is used offline, and renamed by the next pull", async () => {
    await oldLayout(A, 'alice/m_x', 'y-Q4_K_M.gguf', ['hf:alice/m_x']);
    const local = await resolveLocal('hf:alice/m_x');
    expect(hub.requests).toEqual([]);
    expect(local).toBe(join(dir, OLD));

    const r = await pull('hf:alice/m_x');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/alice\+m_x\+y-Q4_K_M\.gguf: renamed from alice_m_x_y-Q4_K_M\.gguf/);
    expect(r.stderr).toMatch(/alice\+m_x\+y-Q4_K_M\.gguf: already here \(sha256 verified\)/);
    expect(cdnRequests()).toBe(0);
    expect(existsSync(join(dir, OLD))).toBe(false);
    expect((await readFile(r.stdout.trim())).equals(A)).toBe(true);
    const manifest = JSON.parse(await readFile(join(dir, '.bmoe-pull.json'), 'utf8')) as { files: Record<string, unknown>; refs: Record<string, string[]> };
    expect(Object.keys(manifest.files)).toEqual(['alice+m_x+y-Q4_K_M.gguf']);
    expect(manifest.refs['hf:alice/m_x']).toEqual(['alice+m_x+y-Q4_K_M.gguf']);
  });

  it("the older name holding the other repository's file: not used for this one (pulled again), taken over by the other", async () => {
    // hf:alice/m_x was pulled, then hf:alice/m overwrote the shared name: both references point at it.
    await oldLayout(B, 'alice/m', 'x_y-Q4_K_M.gguf', ['hf:alice/m_x', 'hf:alice/m']);
    const local = await resolveLocal('hf:alice/m_x');
    expect(cdnRequests()).toBe(1); // asked the hub: the recorded file is not m_x's
    expect(local).toBe(join(dir, 'alice+m_x+y-Q4_K_M.gguf'));
    expect((await readFile(local)).equals(A)).toBe(true);
    expect((await readFile(join(dir, OLD))).equals(B)).toBe(true);

    hub.requests.length = 0;
    const m = await pull('hf:alice/m');
    expect(m.code, m.stderr).toBe(0);
    expect(cdnRequests()).toBe(0);
    expect(m.stdout.trim()).toBe(join(dir, 'alice+m+x_y-Q4_K_M.gguf'));
    expect((await readFile(m.stdout.trim())).equals(B)).toBe(true);
  });
});
