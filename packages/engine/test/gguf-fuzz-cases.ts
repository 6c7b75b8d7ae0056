// Edits of a tiny GGUF's header for the native fuzz test (gguf-native-fuzz.test.ts): bytes set
// or flipped anywhere in the header, and metadata values set to the numbers llama.cpp's shape
// checks care about, or retyped. The tensor data is left alone: loading never reads it as a shape.
import { GgufValueType, ggmlTypes, type GgufFile } from '@bmoe/gguf';
import fc from 'fast-check';

export interface Fixture {
  readonly bytes: Buffer;
  readonly header: GgufFile;
}

export type Edit =
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'value'; entry: number; value: number }
  | { kind: 'retype'; entry: number; type: number }
  | { kind: 'tensorType'; tensor: number; type: number };

const EDGES = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 63, 64, 127, 128, 255, 256, 511, 512, 513, 1023, 1024, 1025, 4096, 65535, 1 << 24, 0x7fffffff, 0x80000000, 0xffffffff];
const FOUR_BYTE_TYPES = [GgufValueType.UINT32, GgufValueType.INT32, GgufValueType.FLOAT32];

export function editArb(): fc.Arbitrary<Edit> {
  return fc.oneof(
    fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ kind: fc.constant('value' as const), entry: fc.nat(), value: fc.oneof(fc.constantFrom(...EDGES), fc.nat()) }),
    fc.record({ kind: fc.constant('retype' as const), entry: fc.nat(), type: fc.constantFrom(...FOUR_BYTE_TYPES) }),
    fc.record({ kind: fc.constant('tensorType' as const), tensor: fc.nat(), type: fc.constantFrom(...ggmlTypes().map((t) => t.type)) }),
  );
}

/** Offset of the value-type field of `key` in GGUF bytes (the value follows it). */
export function typeAt(bytes: Buffer, key: string): number {
  const k = Buffer.from(key);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(k.length));
  const at = bytes.indexOf(Buffer.concat([len, k]));
  if (at < 0) throw new Error(`no key ${key}`);
  return at + 8 + k.length;
}

/** A copy with the 4-byte scalar `key` set to `value` as `type` (uint32, int32 or float32). */
export function withScalar(bytes: Buffer, key: string, type: GgufValueType, value: number): Buffer {
  const out = Buffer.from(bytes);
  const at = typeAt(out, key);
  out.writeUInt32LE(type, at);
  if (type === GgufValueType.FLOAT32) out.writeFloatLE(value, at + 4);
  else if (type === GgufValueType.INT32) out.writeInt32LE(value | 0, at + 4);
  else out.writeUInt32LE(value >>> 0, at + 4);
  return out;
}

/** Offset of tensor `name`'s ggml type field (its info: name, n_dims, dims, type, offset). */
export function tensorTypeAt(bytes: Buffer, name: string, dims: number): number {
  const n = Buffer.from(name);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(n.length));
  const at = bytes.indexOf(Buffer.concat([len, n]));
  if (at < 0) throw new Error(`no tensor ${name}`);
  return at + 8 + n.length + 4 + 8 * dims;
}

/** A copy with tensor `name`'s type set to `type`. */
export function withTensorType(f: Fixture, name: string, type: number): Buffer {
  const t = f.header.tensors.find((x) => x.name === name);
  if (!t) throw new Error(`no tensor ${name}`);
  const out = Buffer.from(f.bytes);
  out.writeUInt32LE(type, tensorTypeAt(out, name, t.dims.length));
  return out;
}

/** A copy where vocabulary token `to` is overwritten with token `from` (both must be the same length). */
export function copyToken(f: Fixture, from: number, to: number): Buffer {
  const out = Buffer.from(f.bytes);
  let at = typeAt(out, 'tokenizer.ggml.tokens') + 4 + 4 + 8; // type, item type, count
  const starts: number[] = [];
  for (let i = 0; i <= Math.max(from, to); i++) {
    starts.push(at);
    at += 8 + Number(out.readBigUInt64LE(at));
  }
  const a = starts[from]!;
  const b = starts[to]!;
  const len = Number(out.readBigUInt64LE(a));
  if (len !== Number(out.readBigUInt64LE(b))) throw new Error(`tokens ${from} and ${to} differ in length`);
  out.copy(out, b + 8, a + 8, a + 8 + len);
  return out;
}

/** The 4-byte scalar metadata entries: where their type field is. */
function scalarFields(f: Fixture): number[] {
  const out: number[] = [];
  for (const [key, e] of f.header.entries ?? []) {
    if (FOUR_BYTE_TYPES.includes(e.type)) out.push(e.offset + 8 + Buffer.byteLength(key));
  }
  return out;
}

/** The fixture's bytes with the edits applied, all inside the header. */
export function applyEdits(f: Fixture, edits: readonly Edit[]): Buffer {
  const out = Buffer.from(f.bytes);
  const headerEnd = f.header.dataOffset;
  const scalars = scalarFields(f);
  for (const e of edits) {
    if (e.kind === 'byte') out[e.at % headerEnd] = e.value;
    else if (e.kind === 'flip') out.writeUInt8(out.readUInt8(e.at % headerEnd) ^ (1 << e.bit), e.at % headerEnd);
    else if (e.kind === 'tensorType') {
      const t = f.header.tensors[e.tensor % f.header.tensors.length]!;
      out.writeUInt32LE(e.type, tensorTypeAt(out, t.name, t.dims.length));
    } else {
      const at = scalars[e.entry % scalars.length]!;
      if (e.kind === 'value') out.writeUInt32LE(e.value >>> 0, at + 4);
      else out.writeUInt32LE(e.type, at);
    }
  }
  return out;
}
