import { copyFileSync, existsSync, openSync, readFileSync, closeSync, writeSync, ftruncateSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GgmlType, GgufError, GgufValueType, layoutGguf, readGguf, writeGguf, type GgufFile } from '../src/index.js';
import { FIXTURE_SPEC, patternBytes, tempDir, writeFixture } from './helpers.js';

const tmp = tempDir();
let fixture: string;
let header: GgufFile;
let bytes: Buffer;

beforeAll(async () => {
  fixture = await writeFixture(tmp.dir);
  header = await readGguf(fixture);
  bytes = readFileSync(fixture);
});
afterAll(() => tmp.cleanup());

describe('writer → reader round trip', () => {
  it('reads back every metadata value with its type', () => {
    expect(header.version).toBe(3);
    expect(header.alignment).toBe(32);
    // general.alignment is added first by the writer
    expect([...header.kv.keys()]).toEqual(['general.alignment', ...[...FIXTURE_SPEC.kv].map(([k]) => k)]);
    for (const [k, v] of FIXTURE_SPEC.kv) {
      const got = header.kv.get(k)!;
      expect(got.type).toBe(v.type);
      if (v.type === GgufValueType.FLOAT32) expect(got.value).toBe(Math.fround(v.value));
      else if (v.type === GgufValueType.ARRAY && v.itemType === GgufValueType.FLOAT32) expect(got.value).toEqual(v.value.map(Math.fround));
      else expect(got).toEqual(v);
    }
    expect(header.kv.get('test.u64')!.value).toBe(2n ** 63n + 5n);
  });

  it('reads back tensor infos with absolute, aligned offsets and exact sizes', () => {
    const layout = layoutGguf(FIXTURE_SPEC);
    expect(header.tensors.map((t) => t.name)).toEqual(FIXTURE_SPEC.tensors.map((t) => t.name));
    expect(header.dataOffset).toBe(layout.dataOffset);
    header.tensors.forEach((t, i) => {
      const spec = FIXTURE_SPEC.tensors[i]!;
      expect(t.dims).toEqual(spec.dims);
      expect(t.type).toBe(spec.type);
      expect(t.offset % 32).toBe(0);
      expect(t).toEqual(layout.tensors[i]);
    });
    expect(header.tensors[2]!.bytes).toBe((256 / 32) * 34 * 64 * 4); // Q8_0 [256, 64, 4]
    expect(header.tensors[3]!.bytes).toBe((256 / 32) * 17 * 64 * 4); // MXFP4
    expect(header.fileSize).toBe(statSync(fixture).size);
    expect(header.fileSize % 32).toBe(0);
  });

  it('places every tensor’s bytes at its offset', () => {
    header.tensors.forEach((t, i) => {
      expect(Buffer.compare(bytes.subarray(t.offset, t.offset + t.bytes), Buffer.from(patternBytes(t, i)))).toBe(0);
    });
  });

  it('rejects plans llama.cpp would reject', () => {
    expect(() => layoutGguf({ kv: [], tensors: [{ name: 'x', dims: [100], type: GgmlType.Q4_K }] })).toThrow(/multiple of 256/);
    expect(() => layoutGguf({ kv: [], tensors: [{ name: 'x'.repeat(64), dims: [32], type: GgmlType.F32 }] })).toThrow(/longer/);
    expect(() => layoutGguf({ kv: [['a', { type: GgufValueType.UINT8, value: 300 }]], tensors: [] })).toThrow(/does not fit/);
    expect(() => layoutGguf({ kv: [], tensors: [{ name: 'a', dims: [32], type: GgmlType.F32 }, { name: 'a', dims: [32], type: GgmlType.F32 }] })).toThrow(/duplicate/);
  });
});

// ---------------------------------------------------------------------------------------
// Malformed files: each is a copy of the fixture with some bytes edited.

/** Offsets of the fields of tensor `name`'s info record in the fixture header. */
function tensorInfoFields(name: string): { nDims: number; dims: number[]; type: number; offset: number } {
  const at = bytes.indexOf(Buffer.from(name, 'utf8'));
  if (at < 8) throw new Error(`tensor ${name} not found`);
  const nDimsAt = at + Buffer.byteLength(name);
  const n = bytes.readUInt32LE(nDimsAt);
  const dims = Array.from({ length: n }, (_, i) => nDimsAt + 4 + 8 * i);
  const typeAt = nDimsAt + 4 + 8 * n;
  return { nDims: nDimsAt, dims, type: typeAt, offset: typeAt + 4 };
}

/** Offset of the value-type field of metadata key k. */
function kvTypeField(k: string): number {
  return bytes.indexOf(Buffer.from(k, 'utf8')) + Buffer.byteLength(k);
}

let variant = 0;
function corrupt(edit: (fd: number) => void): string {
  const p = join(tmp.dir, `bad-${variant++}.gguf`);
  copyFileSync(fixture, p);
  const fd = openSync(p, 'r+');
  try {
    edit(fd);
  } finally {
    closeSync(fd);
  }
  return p;
}
function put(fd: number, at: number, b: Buffer): void {
  writeSync(fd, b, 0, b.length, at);
}
function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}
function u64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
}

async function expectGgufError(path: string, problem: RegExp): Promise<GgufError> {
  const err: unknown = await readGguf(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GgufError);
  const e = err as GgufError;
  expect(e.message).not.toMatch(/[\r\n]/);
  expect(e.message.startsWith(`${path}: `)).toBe(true);
  expect(e.message).toMatch(problem);
  expect(e.message).toMatch(/at byte \d+/);
  expect(e.path).toBe(path);
  expect(e.offset).toBeGreaterThanOrEqual(0);
  return e;
}

describe('malformed files give one-line GgufErrors', () => {
  it('bad magic', async () => {
    const e = await expectGgufError(corrupt((fd) => put(fd, 0, Buffer.from('GGML'))), /bad magic "GGML".*not a GGUF file/);
    expect(e.offset).toBe(0);
  });

  it('unsupported version', async () => {
    await expectGgufError(corrupt((fd) => put(fd, 4, u32(1))), /unsupported GGUF version 1/);
    await expectGgufError(corrupt((fd) => put(fd, 4, u32(0x03000000))), /unsupported GGUF version/);
  });

  it('truncated at several points', async () => {
    const t0 = header.tensors[0]!;
    const last = header.tensors[header.tensors.length - 1]!;
    const cuts = [
      2, // inside the magic
      12, // inside the tensor count
      40, // inside the first key
      kvTypeField('test.strs') + 20, // inside an array of strings
      tensorInfoFields('blk.0.ffn_up_exps.weight').type + 2, // inside tensor infos
      header.dataOffset + 5, // inside the first tensor's data
      last.offset + last.bytes - 1, // one byte short of the last tensor
    ];
    for (const cut of cuts) {
      const e = await expectGgufError(corrupt((fd) => ftruncateSync(fd, cut)), /truncated|could hold at most/);
      expect(e.offset).toBeLessThanOrEqual(Math.max(cut, t0.offset));
    }
    // A cut in the data names the tensor and both sizes.
    await expectGgufError(
      corrupt((fd) => ftruncateSync(fd, last.offset + 10)),
      new RegExp(`truncated: tensor ${last.name.replaceAll('.', '\\.')} data ends at byte ${last.offset + last.bytes} but the file has ${last.offset + 10} bytes`),
    );
  });

  it('absurd tensor count', async () => {
    const e = await expectGgufError(corrupt((fd) => put(fd, 8, u64(1n << 40n))), /absurd tensor count 1099511627776/);
    expect(e.offset).toBe(8);
    await expectGgufError(corrupt((fd) => put(fd, 8, u64(1n << 63n))), /absurd tensor count -9223372036854775808/);
  });

  it('absurd metadata count', async () => {
    const e = await expectGgufError(corrupt((fd) => put(fd, 16, u64(5_000_000n))), /absurd metadata count 5000000/);
    expect(e.offset).toBe(16);
  });

  it('absurd string length', async () => {
    // The first key's length sits right after the header.
    const e = await expectGgufError(corrupt((fd) => put(fd, 24, u64(1n << 50n))), /string length 1125899906842624 of key 0 runs past the end of the file/);
    expect(e.offset).toBe(24);
  });

  it('absurd array length', async () => {
    const at = kvTypeField('test.i32s') + 4 + 4; // value type ARRAY, item type, then the count
    await expectGgufError(corrupt((fd) => put(fd, at, u64(1n << 40n))), /array "test\.i32s" claims 1099511627776 items/);
  });

  it('unknown metadata value type', async () => {
    const at = kvTypeField('test.u16');
    const e = await expectGgufError(corrupt((fd) => put(fd, at, u32(99))), /key "test\.u16" has unknown value type 99/);
    expect(e.offset).toBe(at);
  });

  it('unknown ggml type', async () => {
    const f = tensorInfoFields('blk.0.attn_norm.weight');
    await expectGgufError(corrupt((fd) => put(fd, f.type, u32(4))), /tensor "blk\.0\.attn_norm\.weight" has unknown ggml type 4/);
    await expectGgufError(corrupt((fd) => put(fd, f.type, u32(1000))), /unknown ggml type 1000/);
  });

  it('tensor dimension 0 or overflowing', async () => {
    const f = tensorInfoFields('blk.0.ffn_gate_exps.weight');
    await expectGgufError(corrupt((fd) => put(fd, f.dims[1]!, u64(0n))), /dimension 1 = 0 \(must be > 0\)/);
    await expectGgufError(corrupt((fd) => put(fd, f.dims[1]!, u64(2n ** 63n - 1n))), /elements, which overflows/);
    await expectGgufError(corrupt((fd) => put(fd, f.nDims, u32(7))), /has 7 dimensions/);
  });

  it('data offset beyond the end of the file', async () => {
    const f = tensorInfoFields('output.weight');
    await expectGgufError(corrupt((fd) => put(fd, f.offset, u64(1n << 40n))), /data starts at byte \d+, beyond the end of the file/);
  });

  it('misaligned data offset', async () => {
    const f = tensorInfoFields('blk.0.ffn_up_exps.weight');
    const rel = BigInt(header.tensors[3]!.offset - header.dataOffset);
    const e = await expectGgufError(corrupt((fd) => put(fd, f.offset, u64(rel + 4n))), /not a multiple of the alignment 32 \(misaligned\)/);
    expect(e.offset).toBe(f.offset);
  });

  it('overlapping tensor data', async () => {
    const f = tensorInfoFields('blk.0.ffn_up_exps.weight');
    const rel = BigInt(header.tensors[2]!.offset - header.dataOffset);
    await expectGgufError(corrupt((fd) => put(fd, f.offset, u64(rel))), /overlaps tensor "blk\.0\.ffn_gate_exps\.weight"/);
  });

  it('a file that is not GGUF at all', async () => {
    const p = join(tmp.dir, 'text.gguf');
    writeFileSync(p, 'hello');
    await expectGgufError(p, /bad magic/);
    const empty = join(tmp.dir, 'empty.gguf');
    writeFileSync(empty, '');
    await expectGgufError(empty, /too short/);
  });
});

describe('writer atomicity', () => {
  it('abort mid-write leaves nothing at out (and keeps an existing file untouched)', async () => {
    const out = join(tmp.dir, 'aborted.gguf');
    writeFileSync(out, 'previous content');
    const ac = new AbortController();
    let chunks = 0;
    const p = writeGguf(
      out,
      FIXTURE_SPEC,
      function* (t, i) {
        const b = patternBytes(t, i);
        for (let o = 0; o < b.length; o += 256) {
          if (++chunks === 20) ac.abort(new Error('stop here'));
          yield b.subarray(o, o + 256);
        }
      },
      { signal: ac.signal },
    );
    await expect(p).rejects.toThrow('stop here');
    expect(readFileSync(out, 'utf8')).toBe('previous content');
    expect(existsSync(`${out}.partial`)).toBe(false);
  });

  it('a producer giving the wrong byte count fails cleanly', async () => {
    const out = join(tmp.dir, 'short.gguf');
    await expect(writeGguf(out, FIXTURE_SPEC, (t) => [new Uint8Array(t.bytes - 1)])).rejects.toThrow(/gave \d+ of its \d+ bytes/);
    await expect(writeGguf(out, FIXTURE_SPEC, (t) => [new Uint8Array(t.bytes + 1)])).rejects.toThrow(/more than its/);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.partial`)).toBe(false);
  });

  it('reports progress up to the file size and returns its sha256', async () => {
    const out = join(tmp.dir, 'progress.gguf');
    const seen: number[] = [];
    const res = await writeGguf(out, FIXTURE_SPEC, (t, i) => [patternBytes(t, i)], { onProgress: (d, total) => seen.push(d / total) });
    expect(seen[seen.length - 1]).toBe(1);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    const { createHash } = await import('node:crypto');
    expect(res.sha256).toBe(createHash('sha256').update(readFileSync(out)).digest('hex'));
    expect(res.bytes).toBe(statSync(out).size);
  });
});
