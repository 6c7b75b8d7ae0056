// A message's images as the bytes the native side decodes: a file read, a data URL's base64
// decoded, bytes passed through. Bounded here (bytes) and natively (pixels, before decoding).
import { readFile, stat } from 'node:fs/promises';
import { BmoeError, messageOf } from './errors.js';
import type { ImageSource } from './messages.js';

/** The largest encoded image the engine reads (bytes). A server bounds requests lower itself. */
export const MAX_IMAGE_BYTES = 64 * 1024 * 1024;

/**
 * The largest image (width × height) decoded, and the most pixels a prompt's images hold together:
 * a small file can claim a huge picture (a decompression bomb), so the native side checks the
 * headers before it allocates any pixels.
 */
export const MAX_IMAGE_PIXELS = 64 * 1024 * 1024;

const DATA_URL = /^data:([^,;]*)((?:;[^,;]*)*?)(;base64)?,/i;

function tooBig(n: number, bytes: number, what: string): BmoeError {
  return new BmoeError('E_OPTION', `image ${n} (${what}) is ${bytes} bytes, over the limit of ${MAX_IMAGE_BYTES}`);
}

/** A `data:` URL's bytes: base64 only (an image is binary). */
export function dataUrlBytes(url: string, n: number): Uint8Array {
  const m = DATA_URL.exec(url);
  if (!m) throw new BmoeError('E_OPTION', `image ${n}: not a data URL (data:image/png;base64,...)`);
  if (!m[3]) throw new BmoeError('E_OPTION', `image ${n}: a data URL must be base64 (data:${m[1] || 'image/png'};base64,...)`);
  const body = url.slice(m[0].length);
  if (body.length > (MAX_IMAGE_BYTES * 4) / 3 + 4) throw tooBig(n, Math.floor((body.length * 3) / 4), 'data URL');
  if (!/^[A-Za-z0-9+/=\s_-]*$/.test(body)) throw new BmoeError('E_OPTION', `image ${n}: the data URL's base64 has characters outside base64`);
  const bytes = Buffer.from(body, 'base64');
  if (bytes.length === 0) throw new BmoeError('E_OPTION', `image ${n}: the data URL holds no bytes`);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

async function fileBytes(path: string, n: number): Promise<Uint8Array> {
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new Error('not a file');
    if (st.size > MAX_IMAGE_BYTES) throw tooBig(n, st.size, path);
    return new Uint8Array(await readFile(path));
  } catch (err) {
    if (err instanceof BmoeError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new BmoeError('E_OPTION', `image ${n}: cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : messageOf(err)}`, { cause: err });
  }
}

/** Each source's encoded bytes, in order (image numbers in errors count from 1). */
export async function loadImages(sources: readonly ImageSource[]): Promise<Uint8Array[]> {
  return Promise.all(
    sources.map(async (s, i) => {
      const n = i + 1;
      if (s instanceof Uint8Array) {
        if (s.length > MAX_IMAGE_BYTES) throw tooBig(n, s.length, 'bytes');
        return s;
      }
      return s.startsWith('data:') ? dataUrlBytes(s, n) : fileBytes(s, n);
    }),
  );
}
