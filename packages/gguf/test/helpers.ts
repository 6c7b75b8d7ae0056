import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GgmlType, gv, writeGguf, type GgufSpec, type GgufTensorInfo } from '../src/index.js';

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'bmoe-gguf-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Deterministic bytes of a tensor: byte i = (i·31 + tensorIndex·7) mod 251. */
export function patternBytes(t: GgufTensorInfo, index: number): Uint8Array {
  const b = new Uint8Array(t.bytes);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + index * 7) % 251;
  return b;
}

/** A small spec exercising every metadata value type and several tensor types. */
export const FIXTURE_SPEC: GgufSpec = {
  kv: [
    ['general.architecture', gv.str('qwen3moe')],
    ['general.name', gv.str('fixture ✓ unicode')],
    ['test.u8', gv.u8(250)],
    ['test.i8', gv.i8(-120)],
    ['test.u16', gv.u16(65000)],
    ['test.i16', gv.i16(-32000)],
    ['test.u32', gv.u32(4_000_000_000)],
    ['test.i32', gv.i32(-2_000_000_000)],
    ['test.f32', gv.f32(0.1)],
    ['test.f64', gv.f64(Math.PI)],
    ['test.u64', gv.u64(2n ** 63n + 5n)],
    ['test.i64', gv.i64(-(2n ** 62n))],
    ['test.bool', gv.bool(true)],
    ['test.strs', gv.strs(['a', '', 'ĠThe', '<|im_end|>'])],
    ['test.i32s', gv.i32s([1, -2, 3])],
    ['test.f32s', gv.f32s([0.5, -1.25])],
    ['test.bools', gv.bools([true, false, true])],
    ['qwen3moe.block_count', gv.u32(1)],
    ['qwen3moe.expert_count', gv.u32(4)],
    ['qwen3moe.expert_used_count', gv.u32(2)],
    ['qwen3moe.embedding_length', gv.u32(256)],
  ],
  tensors: [
    { name: 'token_embd.weight', dims: [256, 10], type: GgmlType.Q4_K },
    { name: 'blk.0.attn_norm.weight', dims: [256], type: GgmlType.F32 },
    { name: 'blk.0.ffn_gate_exps.weight', dims: [256, 64, 4], type: GgmlType.Q8_0 },
    { name: 'blk.0.ffn_up_exps.weight', dims: [256, 64, 4], type: GgmlType.MXFP4 },
    { name: 'blk.0.ffn_down_exps.weight', dims: [64, 256, 4], type: GgmlType.Q8_0 },
    { name: 'output.weight', dims: [256, 10], type: GgmlType.Q6_K },
  ],
};

/** Write FIXTURE_SPEC to dir/name with pattern data; returns the path. */
export async function writeFixture(dir: string, name = 'fixture.gguf'): Promise<string> {
  const path = join(dir, name);
  await writeGguf(path, FIXTURE_SPEC, function* (t, i) {
    const b = patternBytes(t, i);
    // Uneven chunks, to exercise the writer's chunk handling.
    for (let o = 0; o < b.length; o += 1000) yield b.subarray(o, o + 1000);
  });
  return path;
}
