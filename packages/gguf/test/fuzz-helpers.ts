// Mutations of a GGUF fixture for the fuzz test: bytes changed in the header, the header's
// counts and lengths set to interesting values (the fields a hostile file would grow), the file
// cut or extended sparsely.
import fc from 'fast-check';
import { GgufValueType, type GgufFile } from '../src/index.js';

export interface Fixture {
  readonly name: string;
  readonly bytes: Buffer;
  readonly dataOffset: number;
  /** Offsets of the header's u64 counts and lengths. */
  readonly fields: readonly number[];
}

export type Mutation =
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'u32'; at: number; value: number }
  | { kind: 'u64'; field: number; value: bigint }
  | { kind: 'cut'; at: number }
  | { kind: 'grow'; by: number };

const U64_EDGES = [0n, 1n, 2n, 63n, 64n, 255n, 2n ** 16n, 2n ** 24n + 1n, 400_000_000n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n];
const U32_EDGES = [0, 1, 2, 3, 4, 6, 8, 9, 12, 13, 0x7fffffff, 0x80000000, 0xffffffff, 1_000_000_000];

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('u32' as const), at: fc.nat(), value: fc.oneof(fc.constantFrom(...U32_EDGES), fc.nat()) }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('u64' as const),
      field: fc.nat(),
      value: fc.oneof(fc.constantFrom(...U64_EDGES), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 1n << 20n })),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('grow' as const), by: fc.integer({ min: 1, max: 256 << 20 }) }), weight: 1 },
);

/** One to four mutations, applied in order. */
export function mutationsArb(): fc.Arbitrary<Mutation[]> {
  return fc.array(mutationArb, { minLength: 1, maxLength: 4 });
}

/** The offsets of the header's u64 counts and lengths: what a hostile header grows. */
export function countFields(bytes: Buffer, header: GgufFile): number[] {
  const fields = [8, 16]; // tensor count, metadata count
  for (const [key, e] of header.entries ?? []) {
    fields.push(e.offset); // the key's length
    const valueAt = e.offset + 8 + Buffer.byteLength(key) + 4;
    if (e.type === GgufValueType.STRING) fields.push(valueAt);
    if (e.type === GgufValueType.ARRAY) {
      fields.push(valueAt + 4); // the item count
      if (e.itemType === GgufValueType.STRING && e.length > 0) fields.push(valueAt + 12); // the first item's length
    }
  }
  for (const t of header.tensors) {
    const name = Buffer.from(t.name);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(name.length));
    const at = bytes.indexOf(Buffer.concat([len, name]));
    if (at < 0) continue;
    fields.push(at);
    const dimsAt = at + 8 + name.length + 4;
    t.dims.forEach((_, d) => fields.push(dimsAt + 8 * d));
    fields.push(dimsAt + 8 * t.dims.length + 4); // the data offset
  }
  return fields;
}

/** The fixture's bytes with the mutations applied, and the size to extend the file to (sparse). */
export function applyMutations(fixture: Fixture, mutations: readonly Mutation[]): { bytes: Buffer; growTo: number | undefined } {
  let b = Buffer.from(fixture.bytes);
  let grow = 0;
  const headerEnd = Math.max(fixture.dataOffset, 32);
  for (const m of mutations) {
    if (m.kind === 'byte') {
      const at = m.at % headerEnd;
      if (at < b.length) b[at] = m.value;
    } else if (m.kind === 'u32') {
      const at = m.at % (headerEnd - 4);
      if (at + 4 <= b.length) b.writeUInt32LE(m.value >>> 0, at);
    } else if (m.kind === 'u64') {
      const at = fixture.fields[m.field % fixture.fields.length]!;
      if (at + 8 <= b.length) b.writeBigUInt64LE(m.value, at);
    } else if (m.kind === 'cut') {
      b = b.subarray(0, m.at % b.length);
    } else {
      grow += m.by;
    }
  }
  return { bytes: b, growTo: grow > 0 ? b.length + grow : undefined };
}
