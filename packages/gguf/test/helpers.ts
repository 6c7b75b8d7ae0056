import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import {
  GgmlType,
  GgufValueType,
  describeModel,
  gv,
  layoutGguf,
  planModel,
  writeGguf,
  type GgufSpec,
  type GgufTensorInfo,
  type GgufValue,
  type ModelPlan,
  type ModelShape,
} from '../src/index.js';

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

// ---------------------------------------------------------------------------------------
// Hostile files: edits of a fixture's bytes and headers that claim far more than they hold.

/** Offset of the key-value pair whose key is `key` (its u64 length field) in GGUF bytes. */
export function kvAt(bytes: Buffer, key: string): number {
  const k = Buffer.from(key, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(k.length));
  const at = bytes.indexOf(Buffer.concat([len, k]));
  if (at < 0) throw new Error(`key ${key} not found`);
  return at;
}

/** Offset of the value-type field of `key` (the value follows it). */
export function kvTypeAt(bytes: Buffer, key: string): number {
  return kvAt(bytes, key) + 8 + Buffer.byteLength(key);
}

/** A copy of `bytes` with the 4-byte scalar of `key` replaced: type and value bits. */
export function withScalar(bytes: Buffer, key: string, type: GgufValueType, write: (b: Buffer, at: number) => void): Buffer {
  const out = Buffer.from(bytes);
  const at = kvTypeAt(out, key);
  out.writeUInt32LE(type, at);
  write(out, at + 4);
  return out;
}

/** A copy of `bytes` with the uint32 value of `key` set to v. */
export function withU32(bytes: Buffer, key: string, v: number): Buffer {
  return withScalar(bytes, key, GgufValueType.UINT32, (b, at) => b.writeUInt32LE(v, at));
}

/**
 * A header-only GGUF (no tensors) whose last metadata entry is an array `key` claiming `count`
 * items of `itemType` that are never written: the file is extended sparsely to hold them (zero
 * bytes: zeros for numbers, empty strings). Costs a few KB of disk whatever `count` is.
 */
export function writeSparseArray(path: string, kv: ReadonlyArray<readonly [string, GgufValue]>, key: string, itemType: GgufValueType, count: number): void {
  const empty: GgufValue = { type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: [] };
  const { header } = layoutGguf({ kv: [...kv, [key, empty]], tensors: [] });
  const out = Buffer.from(header);
  out.writeUInt32LE(itemType, out.length - 12);
  out.writeBigUInt64LE(BigInt(count), out.length - 8);
  writeFileSync(path, out);
  const itemBytes = itemType === GgufValueType.STRING ? 8 : ggufScalarSizeOf(itemType);
  truncateSync(path, out.length + count * itemBytes);
}

function ggufScalarSizeOf(t: GgufValueType): number {
  const sizes: Partial<Record<GgufValueType, number>> = {
    [GgufValueType.UINT8]: 1, [GgufValueType.INT8]: 1, [GgufValueType.BOOL]: 1,
    [GgufValueType.UINT16]: 2, [GgufValueType.INT16]: 2,
    [GgufValueType.UINT32]: 4, [GgufValueType.INT32]: 4, [GgufValueType.FLOAT32]: 4,
    [GgufValueType.UINT64]: 8, [GgufValueType.INT64]: 8, [GgufValueType.FLOAT64]: 8,
  };
  const s = sizes[t];
  if (s === undefined) throw new Error(`no scalar size for type ${t}`);
  return s;
}

/** The metadata of a small qwen3moe-shaped header (no tensors): enough for describeModel. */
export const SHAPE_KV: ReadonlyArray<readonly [string, GgufValue]> = [
  ['general.architecture', gv.str('qwen3moe')],
  ['qwen3moe.block_count', gv.u32(2)],
  ['qwen3moe.expert_count', gv.u32(8)],
  ['qwen3moe.expert_used_count', gv.u32(2)],
  ['qwen3moe.embedding_length', gv.u32(64)],
];

/** Offset of the ggml type field of tensor `name` (with `dims` dimensions) in GGUF bytes. */
export function tensorTypeAt(bytes: Buffer, name: string, dims: number): number {
  const n = Buffer.from(name, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(n.length));
  const at = bytes.indexOf(Buffer.concat([len, n]));
  if (at < 0) throw new Error(`tensor ${name} not found`);
  return at + 8 + n.length + 4 + 8 * dims;
}

/**
 * A real-shape preset planned, not written (tens of GB): its plan and description, checked
 * against the shape its config gives and a file size between minGb and maxGb (10^9 bytes).
 */
export function planRealShape(preset: string, shape: Partial<ModelShape>, [minGb, maxGb]: readonly [number, number]): { plan: ModelPlan; s: ModelShape } {
  const plan = planModel({ preset });
  const s = describeModel(plan.layout);
  expect(s).toMatchObject(shape);
  expect(plan.layout.fileSize / 1e9).toBeGreaterThan(minGb);
  expect(plan.layout.fileSize / 1e9).toBeLessThan(maxGb);
  return { plan, s };
}
