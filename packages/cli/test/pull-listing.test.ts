// `bmoe pull` against a hub whose file list misbehaves (issue 28): pages that loop or never end,
// a listing that stalls, and a repository of 10,000 files in an error. Each case runs the CLI in a
// child with a hard time limit, so a hang fails the test instead of holding it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeHub, type FakeHub } from './fake-hub.js';
import { lines, runCli, type CliResult } from './helpers.js';

let hub: FakeHub;
let dir: string;

beforeAll(async () => {
  hub = await startFakeHub({
    'acme/tiny-GGUF': { files: [{ path: 'tiny-Q8_0.gguf', data: Buffer.from('GGUF tiny') }] },
    'acme/many-GGUF': { files: Array.from({ length: 10_000 }, (_, i) => ({ path: `m${String(i).padStart(5, '0')}-Q8_0.gguf`, data: Buffer.from(`GGUF ${i}`) })) },
  });
  dir = await mkdtemp(join(tmpdir(), 'bmoe-pull-listing-'));
});

afterAll(async () => {
  await hub?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  hub.requests.length = 0;
  hub.treeTrouble = null;
});

function pull(ref: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<CliResult> {
  return runCli(['pull', ref], { env: { HF_ENDPOINT: hub.url, HF_TOKEN: '', BMOE_MODELS_DIR: dir, ...env }, timeoutMs });
}

/** The one `bmoe: error:` line of a failed command (and that it failed, and did not hang). */
function errorLine(r: CliResult): string {
  expect(r.signal, `killed after ${Math.round(r.ms)} ms (a hang): ${r.stderr.slice(-500)}`).toBeNull();
  expect(r.code).toBe(1);
  const errors = lines(r.stderr).filter((l) => l.startsWith('bmoe: error:'));
  expect(errors, r.stderr).toHaveLength(1);
  return errors[0]!;
}

const treeRequests = (): number => hub.requests.filter((q) => q.path.startsWith('/api/')).length;

describe('bmoe pull: a file list that does not end', () => {
  it('an empty page whose next link is itself ends at the repeat, in one line', async () => {
    hub.treeTrouble = 'repeat-empty';
    const r = await pull('hf:acme/tiny-GGUF', {}, 20_000);
    expect(errorLine(r)).toMatch(/^bmoe: error: hf:acme\/tiny-GGUF: the file list's next-page link goes back to a page already read \(http:\/\/127\.0\.0\.1:\d+\/api\/models\/acme\/tiny-GGUF\/tree\/main\?/);
    expect(treeRequests()).toBe(1);
  });

  it('empty pages linking to ever new cursors end after 3', async () => {
    hub.treeTrouble = 'empty-pages';
    const r = await pull('hf:acme/tiny-GGUF', {}, 20_000);
    expect(errorLine(r)).toMatch(/^bmoe: error: hf:acme\/tiny-GGUF: the hub sent 3 empty pages of the file list in a row, each linking to another \(next: http:.*cursor=3/);
    expect(treeRequests()).toBe(3);
  });

  it('pages that never end (one new entry each) stop at 2000 pages', async () => {
    hub.treeTrouble = 'endless';
    const r = await pull('hf:acme/tiny-GGUF', {}, 60_000);
    expect(errorLine(r)).toBe('bmoe: error: hf:acme/tiny-GGUF: the file list goes on past 2000 pages (2000 entries so far); refused');
    expect(treeRequests()).toBe(2000);
  });

  it('a 10,000-file listing still works (10 pages)', async () => {
    const r = await pull('hf:acme/many-GGUF/m09999-Q8_0.gguf');
    expect(r.code, r.stderr).toBe(0);
    expect(treeRequests()).toBe(10);
  });
});

describe('bmoe pull: a stalled file list', () => {
  it('no answer to a page request is cut after the idle timeout (BMOE_PULL_IDLE_TIMEOUT)', async () => {
    hub.treeTrouble = 'no-answer';
    const r = await pull('hf:acme/tiny-GGUF', { BMOE_PULL_IDLE_TIMEOUT: '1' }, 20_000);
    expect(errorLine(r)).toMatch(/^bmoe: error: cannot fetch hf:acme\/tiny-GGUF's file list at http:\/\/127\.0\.0\.1:\d+: no data for 1 s$/);
    expect(r.ms).toBeLessThan(10_000);
  });

  it('half a page, then nothing, is cut after the idle timeout too', async () => {
    hub.treeTrouble = 'stall-body';
    const r = await pull('hf:acme/tiny-GGUF', { BMOE_PULL_IDLE_TIMEOUT: '0.5' }, 20_000);
    expect(errorLine(r)).toMatch(/file list at http:\/\/127\.0\.0\.1:\d+: no data for 0\.5 s$/);
    expect(r.ms).toBeLessThan(10_000);
  });

  it('a malformed BMOE_PULL_IDLE_TIMEOUT is one line', async () => {
    const r = await pull('hf:acme/tiny-GGUF', { BMOE_PULL_IDLE_TIMEOUT: 'soon' });
    expect(errorLine(r)).toBe("bmoe: error: BMOE_PULL_IDLE_TIMEOUT must be a number of seconds above 0 (it is 'soon')");
  });
});

describe('bmoe pull: errors about a 10,000-file repository', () => {
  it('list the first 20 names and how many more, not all of them', async () => {
    const missing = errorLine(await pull('hf:acme/many-GGUF:Q5_K_S'));
    expect(missing.length).toBeLessThan(600);
    expect(missing).toMatch(/^bmoe: error: hf:acme\/many-GGUF:Q5_K_S: no Q5_K_S GGUF in the repository; it has: m00000-Q8_0\.gguf, m00001-Q8_0\.gguf, .*, m00019-Q8_0\.gguf and 9980 more$/);

    const ambiguous = errorLine(await pull('hf:acme/many-GGUF'));
    expect(ambiguous.length).toBeLessThan(700);
    expect(ambiguous).toMatch(/^bmoe: error: hf:acme\/many-GGUF: the repository has 10000 GGUF models: m00000-Q8_0\.gguf, .* and 9980 more; name one, e\.g\. hf:acme\/many-GGUF\/m00000-Q8_0\.gguf$/);

    const many = errorLine(await pull('hf:acme/many-GGUF:q8_0'));
    expect(many.length).toBeLessThan(700);
    expect(many).toMatch(/q8_0 matches 10000 models: .* and 9980 more; name one/);
  });
});
