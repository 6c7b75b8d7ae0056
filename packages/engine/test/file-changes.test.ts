// A model file changed under a running process (`cp new.gguf served.gguf` truncates first) must
// never kill it: resident and streamed alike, the request gets a one-line E_MODEL_CHANGED error,
// only correct tokens come out, and the model keeps saying so (fileStatus) until it is reloaded.
// Each case runs in a child process, so a SIGBUS shows up as a failed case, not a dead test runner.
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from '../src/index.js';

const PROMPT = 'The quick brown fox jumps over the lazy dog';
const ENGINE = resolve(import.meta.dirname, '../dist/index.js');

// The child: load, generate, truncate the file (between turns or mid-generation), generate again.
const CHILD = `
import { truncateSync, statSync } from 'node:fs';
const { loadModel } = await import(process.env.BMOE_ENGINE);
const [path, mode, when, victimArg] = process.argv.slice(2);
const victim = victimArg ?? path; // the file to truncate: the model, or one shard of a split model
const load = { threads: 2, ...(mode === 'resident' ? {} : { stream: { moeStream: true, cacheMb: 0 } }) };
const m = await loadModel(path, load);
const s = m.createSession();
const size = statSync(victim).size;
const out = { seen: [], error: null, after: null, status: null };
const fail = (e) => ({ code: e.code, message: e.message });
if (when === 'between') {
  out.seen = (await s.generate(${JSON.stringify(PROMPT)}, { maxTokens: 8 }).result).tokens;
  truncateSync(victim, Math.floor(size / 2));
  await s.generate('again', { maxTokens: 8 }).result.catch((e) => { out.error = fail(e); });
} else {
  const gen = s.generate(${JSON.stringify(PROMPT)}, { maxTokens: 48 });
  try {
    for await (const ev of gen) {
      out.seen.push(ev.tokenId);
      if (ev.tokenIndex === 4) truncateSync(victim, 4096);
    }
    await gen.result;
  } catch (e) { out.error = fail(e); }
}
await m.createSession().generate('later', { maxTokens: 2 }).result.catch((e) => { out.after = fail(e); });
out.status = m.fileStatus();
await m.close();
console.log(JSON.stringify(out));
`;

interface ChildOut {
  seen: number[];
  error: { code: string; message: string } | null;
  after: { code: string; message: string } | null;
  status: string | null;
}

describe('model file changed under a loaded model (tiny-qwen3moe)', () => {
  let dir: string;
  let fixture: string;
  let script: string;
  let reference: number[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-changed-'));
    fixture = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: fixture });
    script = join(dir, 'child.mjs');
    await writeFile(script, CHILD);
    const m = await loadModel(fixture, { threads: 2 });
    reference = (await m.createSession().generate(PROMPT, { maxTokens: 48 }).result).tokens;
    await m.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function run(mode: 'resident' | 'stream', when: 'between' | 'mid'): Promise<ChildOut> {
    const p = join(dir, `${mode}-${when}.gguf`);
    await copyFile(fixture, p);
    const r = spawnSync(process.execPath, [script, p, mode, when], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, BMOE_ENGINE: ENGINE },
    });
    // Survived: no signal, exit 0, one JSON line.
    expect({ signal: r.signal, status: r.status, stderr: r.status === 0 ? '' : r.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as ChildOut;
  }

  it.each([
    ['resident', 'between'],
    ['resident', 'mid'],
    ['stream', 'mid'],
  ] as const)('%s model, file truncated %s generation: the process survives and says so', async (mode, when) => {
    const out = await run(mode, when);
    expect(out.error?.code).toBe('E_MODEL_CHANGED');
    expect(out.error?.message).toMatch(/truncated|changed on disk/);
    expect(out.error?.message).not.toContain('\n');
    // Every token that came out is the intact model's token; none after the truncation.
    expect(out.seen).toEqual(reference.slice(0, out.seen.length));
    if (when === 'mid') expect(out.seen.length).toBeLessThan(48);
    // Poisoned until reloaded: later requests fail the same way, fileStatus says why.
    expect(out.after?.code).toBe('E_MODEL_CHANGED');
    expect(out.status).toMatch(/truncated|changed on disk/);
  });
});

// A split model is guarded shard by shard: truncating a later shard (it holds experts and dense
// weights) is caught the same way, and the message names that shard.
describe('a shard of a split model changed under it (tiny-qwen3moe in 3+ shards)', () => {
  let dir: string;
  let script: string;
  let shards: string[] = [];
  let reference: number[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-changed-split-'));
    const made = await makeModel({ preset: 'tiny-qwen3moe', out: join(dir, 'orig', 'm.gguf'), splitMaxBytes: 3_000_000 });
    shards = made.shards.map((s) => s.path);
    script = join(dir, 'child.mjs');
    await writeFile(script, CHILD);
    const m = await loadModel(shards[0] ?? '', { threads: 2 });
    reference = (await m.createSession().generate(PROMPT, { maxTokens: 48 }).result).tokens;
    await m.close();
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(['resident', 'stream'] as const)('%s: shard 2 truncated mid-generation: the process survives and names the shard', async (mode) => {
    const copy = join(dir, mode);
    await mkdir(copy, { recursive: true });
    const paths = await Promise.all(shards.map(async (s) => {
      const to = join(copy, basename(s));
      await copyFile(s, to);
      return to;
    }));
    expect(paths.length).toBeGreaterThanOrEqual(3);
    const r = spawnSync(process.execPath, [script, paths[0] ?? '', mode, 'mid', paths[1] ?? ''], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, BMOE_ENGINE: ENGINE },
    });
    expect({ signal: r.signal, status: r.status, stderr: r.status === 0 ? '' : r.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as ChildOut;
    expect(out.error?.code).toBe('E_MODEL_CHANGED');
    expect(out.error?.message).toContain(basename(paths[1] ?? ''));
    expect(out.error?.message).not.toContain('\n');
    expect(out.seen).toEqual(reference.slice(0, out.seen.length));
    expect(out.seen.length).toBeLessThan(48);
    expect(out.after?.code).toBe('E_MODEL_CHANGED');
    expect(out.status).toContain(basename(paths[1] ?? ''));
  });
});
