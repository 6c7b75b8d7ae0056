// Issue 13: mutated tiny GGUFs through the real load, each in a child process so that a crash is
// seen as the signal it is. loadModel (and, when it loads, a two-token generation) must end in a
// working model or a one-line error, never a signal or a hang. The known crashes come first (each
// aborted the process before the JS pre-check), then seeded random header mutations; a failure
// prints the case. BMOE_FUZZ_SEED=<n> (default 13) and BMOE_FUZZ_CASES=<n> (default 30) vary
// them. Needs the native addon: without it every case reports E_NATIVE and the test fails (it
// does not skip).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GgmlType, GgufValueType, makeModel, readGguf } from '@bmoe/gguf';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale } from '../../../tooling/test-utils.mjs';
import { applyEdits, copyToken, editArb, withScalar, withTensorType, type Edit, type Fixture } from './gguf-fuzz-cases.js';

const SEED = Number(process.env.BMOE_FUZZ_SEED ?? 13);
const RANDOM_CASES = Number(process.env.BMOE_FUZZ_CASES ?? 30);
const PRESETS = ['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4'] as const;
const ENGINE_DIST = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;

// The child: load, generate two tokens, print one JSON line. Any signal or hang is the parent's to see.
const CHILD = `
const { loadModel } = await import(process.argv[1]);
const path = process.argv[2];
const report = (stage, e) => ({ ok: false, stage, code: e?.code ?? null, message: String(e?.message ?? e) });
let out;
try {
  const model = await loadModel(path, { threads: 1, contextSize: 128, batchSize: 32, ubatchSize: 32 });
  try {
    const r = await model.createSession().generate('The quick brown fox', { maxTokens: 2 }).result;
    out = { ok: true, tokens: r.generatedTokens };
  } catch (e) { out = report('generate', e); }
  await model.close();
} catch (e) { out = report('load', e); }
process.stdout.write(JSON.stringify(out) + '\\n');
`;

interface Outcome {
  signal: NodeJS.Signals | null;
  status: number | null;
  hung: boolean;
  result: { ok: boolean; stage?: string; code?: string | null; message?: string } | null;
  stderrTail: string;
}

function runChild(path: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, ENGINE_DIST, path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, 60_000);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      let result: Outcome['result'] = null;
      try {
        result = JSON.parse(stdout.trim().split('\n').pop() ?? '') as Outcome['result'];
      } catch {
        result = null;
      }
      const stderrTail = stderr.split('\n').filter((l) => /ASSERT|abort|error/i.test(l)).slice(-2).join(' | ');
      resolve({ signal, status, hung, result, stderrTail });
    });
  });
}

interface Case {
  name: string;
  preset: (typeof PRESETS)[number];
  edit: (f: Fixture) => Buffer;
  cut?: number;
  /** What a fixed case must end in: loaded, or refused with a message matching this. */
  expect?: 'ok' | RegExp;
}

const FIXED: Case[] = [
  { name: 'unmodified', preset: 'tiny-qwen3moe', edit: (f) => f.bytes, expect: 'ok' },
  { name: 'unmodified', preset: 'tiny-gemma4', edit: (f) => f.bytes, expect: 'ok' },
  { name: 'expert_count 1e9', preset: 'tiny-qwen3moe', edit: (f) => withScalar(f.bytes, 'qwen3moe.expert_count', GgufValueType.UINT32, 1e9), expect: /expert_count is 1000000000/ },
  { name: 'expert_used_count 17 > 16', preset: 'tiny-qwen3moe', edit: (f) => withScalar(f.bytes, 'qwen3moe.expert_used_count', GgufValueType.UINT32, 17), expect: /expert_used_count is 17/ },
  { name: 'float expert_used_count', preset: 'tiny-qwen3moe', edit: (f) => withScalar(f.bytes, 'qwen3moe.expert_used_count', GgufValueType.FLOAT32, 2.5), expect: /expert_used_count is .*float32/ },
  { name: 'block_count 600', preset: 'tiny-gpt-oss', edit: (f) => withScalar(f.bytes, 'gpt-oss.block_count', GgufValueType.UINT32, 600), expect: /block_count is 600/ },
  { name: 'gemma4 value_length 64', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'gemma4.attention.value_length', GgufValueType.UINT32, 64), expect: /key_length is 128 but attention\.value_length is 64/ },
  { name: 'duplicate token', preset: 'tiny-gpt-oss', edit: (f) => copyToken(f, 1700, 1701), expect: /tokens has token 1701 equal to token 1700/ },
  { name: 'rms epsilon NaN', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'gemma4.attention.layer_norm_rms_epsilon', GgufValueType.FLOAT32, NaN), expect: /layer_norm_rms_epsilon is NaN/ },
  { name: 'rms epsilon -1', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'gemma4.attention.layer_norm_rms_epsilon', GgufValueType.FLOAT32, -1), expect: /layer_norm_rms_epsilon is -1/ },
  { name: 'shared_kv_layers 5 of 6', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'gemma4.attention.shared_kv_layers', GgufValueType.UINT32, 5), expect: /shared_kv_layers is 5/ },
  { name: 'bos_token_id 99999', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'tokenizer.ggml.bos_token_id', GgufValueType.UINT32, 99_999), expect: /bos_token_id is 99999/ },
  { name: 'rope.dimension_count_swa 1000', preset: 'tiny-gemma4', edit: (f) => withScalar(f.bytes, 'gemma4.rope.dimension_count_swa', GgufValueType.UINT32, 1000), expect: /dimension_count_swa is 1000/ },
  { name: 'attn_norm I32', preset: 'tiny-qwen3moe', edit: (f) => withTensorType(f, 'blk.0.attn_norm.weight', GgmlType.I32), expect: /attn_norm\.weight" has type I32/ },
  { name: 'ffn_gate_inp I32 (was SIGSEGV)', preset: 'tiny-gemma4', edit: (f) => withTensorType(f, 'blk.0.ffn_gate_inp.weight', GgmlType.I32), expect: /ffn_gate_inp\.weight" has type I32/ },
  { name: 'attn_sinks F16', preset: 'tiny-gpt-oss', edit: (f) => withTensorType(f, 'blk.0.attn_sinks.weight', GgmlType.F16), expect: /attn_sinks\.weight" has type F16/ },
  { name: 'expert bias I32', preset: 'tiny-gpt-oss', edit: (f) => withTensorType(f, 'blk.0.ffn_down_exps.bias', GgmlType.I32), expect: /ffn_down_exps\.bias" has type I32/ },
  { name: 'cut at byte 30', preset: 'tiny-qwen3moe', edit: (f) => f.bytes, cut: 30, expect: /truncated: the header ends early/ },
];

let dir: string;
const fixtures = new Map<string, Fixture>();

beforeAll(async () => {
  // The child imports the built engine (and through it the built @bmoe/gguf): make both current.
  buildIfStale(fileURLToPath(new URL('../../gguf', import.meta.url)), 'index.js');
  buildIfStale(fileURLToPath(new URL('..', import.meta.url)), 'index.js');
  dir = await mkdtemp(join(tmpdir(), 'bmoe-native-fuzz-'));
  for (const preset of PRESETS) {
    const path = join(dir, `${preset}.gguf`);
    await makeModel({ preset, out: path });
    fixtures.set(preset, { bytes: await readFile(path), header: await readGguf(path) });
  }
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function randomCases(): Case[] {
  const arb = fc.tuple(fc.constantFrom(...PRESETS), fc.array(editArb(), { minLength: 1, maxLength: 3 }));
  return fc.sample(arb, { seed: SEED, numRuns: RANDOM_CASES }).map(([preset, edits]: [Case['preset'], Edit[]], i) => ({
    name: `seed ${SEED} #${i}: ${JSON.stringify(edits)}`,
    preset,
    edit: (f: Fixture) => applyEdits(f, edits),
  }));
}

describe('native load of mutated GGUFs (child processes)', () => {
  it('every case ends in a working model or a one-line error, never a signal or a hang', async () => {
    const problems: string[] = [];
    const cases = [...FIXED, ...randomCases()];
    let n = 0;
    for (const c of cases) {
      const path = join(dir, `case-${n++}.gguf`);
      await writeFile(path, c.edit(fixtures.get(c.preset)!));
      if (c.cut !== undefined) await truncate(path, c.cut);
      const o = await runChild(path);
      const where = `${c.preset} ${c.name}`;
      const r = o.result;
      if (o.hung) problems.push(`${where}: hung (killed after 60 s)`);
      else if (o.signal) problems.push(`${where}: killed by ${o.signal} (${o.stderrTail})`);
      else if (o.status !== 0 || !r) problems.push(`${where}: exit ${o.status}, no result (${o.stderrTail})`);
      else if (!r.ok && /\n/.test(r.message ?? '')) problems.push(`${where}: a multi-line error: ${JSON.stringify(r.message)}`);
      else if (!r.ok && r.stage === 'load' && !(r.message ?? '').startsWith(`${path}: `)) problems.push(`${where}: a load error not naming the file: ${r.message}`);
      else if (c.expect === 'ok' && !r.ok) problems.push(`${where}: should load and generate, got ${r.code}: ${r.message}`);
      else if (c.expect instanceof RegExp && (r.ok || !c.expect.test(r.message ?? ''))) problems.push(`${where}: expected ${c.expect}, got ${r.ok ? 'a working model' : r.message}`);
    }
    expect(problems).toEqual([]);
  });
});
