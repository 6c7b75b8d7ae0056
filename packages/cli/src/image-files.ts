// The image files `bmoe run --image` and `bmoe chat` take, checked by the CLI before they go to the
// engine: a file, not over the engine's size bound, in a format llama.cpp's image reader
// (stb_image) decodes — known by its first bytes, so a text file or a WebP is refused when it is
// named, with one line, not after the model has loaded (run) or when the message is sent (chat).
// The engine decodes it again and has the last word (a damaged picture, too many pixels).
import { open, stat } from 'node:fs/promises';
import { MAX_IMAGE_BYTES } from '@bmoe/engine';

/** The engine's bound on an encoded image: said before reading. */
export { MAX_IMAGE_BYTES };

/** The formats stb_image reads, as the engine's own refusal lists them. */
export const IMAGE_FORMATS = 'PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR';

/** The file names a path dropped into the chat must end with to be taken as an image (TGA has no magic, so no more). */
export const IMAGE_EXTENSIONS = ['.png', '.jpg', '.jpeg', '.gif', '.bmp'] as const;

/** The image format of a file that starts with `head` (and is named `name`), or null. */
export function imageFormat(head: Uint8Array, name = ''): string | null {
  const starts = (...bytes: number[]): boolean => bytes.every((b, i) => head[i] === b);
  const ascii = (s: string, at = 0): boolean => [...s].every((c, i) => head[at + i] === c.charCodeAt(0));
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'png';
  if (starts(0xff, 0xd8, 0xff)) return 'jpeg';
  if (ascii('GIF87a') || ascii('GIF89a')) return 'gif';
  if (ascii('BM')) return 'bmp';
  if (ascii('8BPS')) return 'psd';
  if (ascii('#?RADIANCE') || ascii('#?RGBE')) return 'hdr';
  // Binary PNM (stb_image reads P5 and P6 only), the magic then whitespace.
  if ((ascii('P5') || ascii('P6')) && [0x20, 0x09, 0x0a, 0x0d].includes(head[2] ?? 0)) return 'pnm';
  // TGA has no magic: its name says it.
  if (/\.tga$/i.test(name) && head.length >= 18) return 'tga';
  return null;
}

/** What a file that is not an image is, when it is something we can name (a WebP: an image this build does not read). */
function notImage(head: Uint8Array): string {
  const webp = head.length >= 12 && String.fromCharCode(...head.subarray(0, 4)) === 'RIFF' && String.fromCharCode(...head.subarray(8, 12)) === 'WEBP';
  return webp ? `a WebP image, which this build does not read (it reads ${IMAGE_FORMATS})` : `not an image (${IMAGE_FORMATS})`;
}

export interface ImageFile {
  path: string;
  format: string;
  bytes: number;
}

/**
 * Checks that `path` is an image file bmoe can send; throws an Error whose one-line message starts
 * with the path: `PATH: no such file`, `PATH: not a file`, `PATH: N bytes, over the limit of M`,
 * `PATH: not an image (PNG, ...)`.
 */
export async function checkImageFile(path: string): Promise<ImageFile> {
  let size: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new Error(`${path}: not a file`);
    size = st.size;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
    throw new Error(code === 'ENOENT' ? `${path}: no such file` : `${path}: ${(err as Error).message}`, { cause: err });
  }
  if (size > MAX_IMAGE_BYTES) throw new Error(`${path}: ${size} bytes, over the limit of ${MAX_IMAGE_BYTES} for an image`);
  const head = await readHead(path, 32);
  const format = imageFormat(head, path);
  if (format === null) throw new Error(`${path}: ${size === 0 ? 'an empty file' : notImage(head)}`);
  return { path, format, bytes: size };
}

async function readHead(path: string, n: number): Promise<Uint8Array> {
  let file;
  try {
    file = await open(path, 'r');
    const buf = new Uint8Array(n);
    const { bytesRead } = await file.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    await file?.close();
  }
}
