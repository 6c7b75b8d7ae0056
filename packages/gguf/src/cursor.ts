// A forward-only cursor over an untrusted file with bounded buffered reads: the GGUF reader's
// only way to touch bytes. Every read is checked against the file end first, so a length a file
// claims never becomes an allocation larger than the bytes that are really there; skips move the
// position without reading what they pass over.

import type { FileHandle } from 'node:fs/promises';
import { GgufError } from './errors.js';
import { GgufValueType, ggufScalarSize } from './types.js';

const CHUNK = 1 << 20;

export class Cursor {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  pos = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly path: string,
    readonly size: number,
  ) {}

  fail(problem: string, at = this.pos): never {
    throw new GgufError(this.path, at, problem);
  }

  remaining(): number {
    return this.size - this.pos;
  }

  /** Make `n` bytes at pos available in buf; fails as "truncated" past end of file. */
  private async need(n: number, what: string): Promise<void> {
    if (n > this.remaining()) {
      this.fail(`truncated: ${what} needs ${n} bytes but the file ends at byte ${this.size}`);
    }
    if (this.has(n)) return;
    const len = Math.min(Math.max(n, CHUNK), this.size - this.pos);
    const next = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await this.fh.read(next, got, len - got, this.pos + got);
      if (bytesRead === 0) this.fail(`truncated: the file ended while reading ${what} (it shrank while being read)`, this.pos + got);
      got += bytesRead;
    }
    this.buf = next;
    this.bufStart = this.pos;
  }

  private at(): number {
    return this.pos - this.bufStart;
  }

  /** Whether n bytes at pos are already buffered (the sync fast paths below need this). */
  private has(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length;
  }

  /** The u64 at buf[o] as a number when below 2^53, else Infinity (always past any file end). */
  private lengthAt(o: number): number {
    const hi = this.buf.readUInt32LE(o + 4);
    return hi >= 0x200000 ? Infinity : hi * 0x1_0000_0000 + this.buf.readUInt32LE(o);
  }

  /** Moves past `n` bytes without reading them (n was checked against the file end by the caller). */
  skip(n: number): void {
    this.pos += n;
  }

  /**
   * Moves past `count` GGUF strings without decoding them: only their lengths are read, so the
   * cost is the length fields, never the claimed string bytes.
   */
  async skipStrings(count: number, what: (i: number) => string): Promise<void> {
    let i = 0;
    while (i < count) {
      if (!this.has(8)) await this.need(8, `the length of ${what(i)}`);
      // The lengths inside the buffered chunk, in a tight loop (a table of 400M strings costs
      // seconds, not minutes); lengths past 2^32 and the file end go to the checked path.
      const buf = this.buf;
      const end = buf.length - 8;
      const fileEnd = this.size - this.bufStart;
      let o = this.at();
      while (i < count && o <= end && buf.readUInt32LE(o + 4) === 0) {
        const next = o + 8 + buf.readUInt32LE(o);
        if (next > fileEnd) break;
        o = next;
        i++;
      }
      this.pos = this.bufStart + o;
      if (i === count || !this.has(8)) continue;
      const len = this.lengthAt(this.at());
      if (len > this.remaining() - 8) this.tooLong(this.buf.readBigUInt64LE(this.at()), what(i));
      this.pos += 8 + len;
      i++;
    }
  }

  private tooLong(len: bigint, what: string): never {
    this.fail(`truncated or corrupt: the string length ${len} of ${what} runs past the end of the file at byte ${this.size}`);
  }

  /**
   * A string if it is entirely buffered and well-formed, else undefined (the async path then
   * reads it or reports the problem). Avoids one await per item in 262k-token vocab arrays.
   */
  strSync(): string | undefined {
    if (!this.has(8)) return undefined;
    const len = this.lengthAt(this.at());
    if (len > this.remaining() - 8 || !this.has(8 + len)) return undefined;
    const o = this.at() + 8;
    const s = this.buf.toString('utf8', o, o + len);
    this.pos += 8 + len;
    return s;
  }

  async u32(what: string): Promise<number> {
    await this.need(4, what);
    const v = this.buf.readUInt32LE(this.at());
    this.pos += 4;
    return v;
  }

  async u64(what: string): Promise<bigint> {
    await this.need(8, what);
    const v = this.buf.readBigUInt64LE(this.at());
    this.pos += 8;
    return v;
  }

  async i64(what: string): Promise<bigint> {
    await this.need(8, what);
    const v = this.buf.readBigInt64LE(this.at());
    this.pos += 8;
    return v;
  }

  /** A GGUF string's length (u64), checked against the file end; the cursor is then at its bytes. */
  async strLength(what: string): Promise<number> {
    const start = this.pos;
    const len = await this.u64(`the length of ${what}`);
    if (len > BigInt(this.remaining())) {
      this.pos = start;
      this.tooLong(len, what);
    }
    return Number(len);
  }

  /** `n` bytes at the cursor as UTF-8 (n was checked by strLength and is bounded by the caller). */
  async strBytes(n: number, what: string): Promise<string> {
    await this.need(n, what);
    const s = this.buf.toString('utf8', this.at(), this.at() + n);
    this.pos += n;
    return s;
  }

  /** A GGUF string: u64 length + UTF-8 bytes, refused above `max` bytes before anything is read. */
  async str(what: string, max: number): Promise<string> {
    const start = this.pos;
    const n = await this.strLength(what);
    if (n > max) this.fail(`${what} is ${n} bytes long, more than the ${max} bytes allowed`, start);
    return this.strBytes(n, what);
  }

  /** One scalar if buffered (and valid), else undefined; see strSync. */
  scalarSync(t: GgufValueType): number | bigint | boolean | undefined {
    const size = ggufScalarSize(t);
    if (size === 0 || !this.has(size)) return undefined;
    const o = this.at();
    let v: number | bigint | boolean;
    switch (t) {
      case GgufValueType.UINT8: v = this.buf.readUInt8(o); break;
      case GgufValueType.INT8: v = this.buf.readInt8(o); break;
      case GgufValueType.UINT16: v = this.buf.readUInt16LE(o); break;
      case GgufValueType.INT16: v = this.buf.readInt16LE(o); break;
      case GgufValueType.UINT32: v = this.buf.readUInt32LE(o); break;
      case GgufValueType.INT32: v = this.buf.readInt32LE(o); break;
      case GgufValueType.FLOAT32: v = this.buf.readFloatLE(o); break;
      case GgufValueType.FLOAT64: v = this.buf.readDoubleLE(o); break;
      case GgufValueType.UINT64: v = this.buf.readBigUInt64LE(o); break;
      case GgufValueType.INT64: v = this.buf.readBigInt64LE(o); break;
      case GgufValueType.BOOL: {
        const b = this.buf.readUInt8(o);
        if (b > 1) return undefined;
        v = b === 1;
        break;
      }
      default:
        return undefined;
    }
    this.pos += size;
    return v;
  }

  /** One scalar of a fixed-size type. */
  async scalar(t: GgufValueType, what: string): Promise<number | bigint | boolean> {
    const size = ggufScalarSize(t);
    if (size === 0) this.fail(`${what} has non-scalar type ${t}`);
    await this.need(size, what);
    const v = this.scalarSync(t);
    // Buffered and fixed-size, so the only way to get nothing back is a bool byte other than 0/1.
    if (v === undefined) this.fail(`${what} is a bool with byte value ${this.buf.readUInt8(this.at())} (must be 0 or 1)`);
    return v;
  }
}
