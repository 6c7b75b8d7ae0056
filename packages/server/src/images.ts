// Images in requests: every image a client sends (an OpenAI `image_url` part, an Anthropic `image`
// block, a Responses `input_image` part) is read here into the bytes the engine decodes, before the
// request waits for the model: a data URL's base64 decoded, an http(s) URL fetched only with
// `allowImageUrls` (within a timeout and the byte limit). The engine reads a string image as a file
// path, so no client's string ever reaches it. Every refusal is a one-line 400 naming the field the
// image came in and its number in the request (from 1, as the engine's own refusals count them).
import type { FastifyReply } from 'fastify';
import type { ServerCore } from './core.js';
import { ApiError, badRequest, messageOf, shuttingDown } from './errors.js';
import type { MessageBody } from './request-fields.js';
import { watchRequest } from './serve.js';

/** An image as the client sent it: its URL, and the field it came in (`messages[0].content[1].image_url.url`). */
export interface ImageRef {
  readonly url: string;
  readonly param: string;
}

/** A request's images, read: by URL (the same URL twice is read once), the bytes and the first field it came in. */
export interface RequestImages {
  readonly bytes: ReadonlyMap<string, Uint8Array>;
  readonly params: ReadonlyMap<string, string>;
}

export const NO_IMAGES: RequestImages = { bytes: new Map(), params: new Map() };

/** How long fetching one image URL may take, headers and body. */
export const IMAGE_FETCH_TIMEOUT_MS = 30_000;

/** The image parts of OpenAI chat messages, in order. */
export function chatImageRefs(messages: readonly MessageBody[]): ImageRef[] {
  const refs: ImageRef[] = [];
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((p, j) => {
      if (p.type === 'image_url') refs.push({ url: p.image_url.url, param: `messages[${i}].content[${j}].image_url.url` });
    });
  });
  return refs;
}

const refuse = (ref: ImageRef, message: string, code = 'invalid_value'): ApiError => badRequest(`invalid '${ref.param}': ${message}`, ref.param, code);

/** A URL as an error line shows it: short. */
const shown = (url: string): string => (url.length > 120 ? `${url.slice(0, 117)}...` : url);

const overLimit = (ref: ImageRef, n: number, bytes: number, max: number): ApiError =>
  refuse(ref, `image ${n} is ${bytes} bytes, over the limit of ${max} (bmoe serve --image-max-bytes)`);

/**
 * Reads the request's images (none: at once). Refused before any is read: images for a model
 * without a projector, more than `maxImages`, a URL that is neither a data URL nor (with
 * `allowImageUrls`) http(s). A client that leaves, or the shutdown, stops a fetch.
 */
export async function readImages(core: ServerCore, refs: readonly ImageRef[], reply: FastifyReply): Promise<RequestImages> {
  if (refs.length === 0) return NO_IMAGES;
  const urls = checkImages(core, refs);
  const watch = watchRequest(reply, core.shutdownSignal);
  const bytes = new Map<string, Uint8Array>();
  const params = new Map<string, string>();
  try {
    for (const [i, ref] of refs.entries()) {
      if (bytes.has(ref.url)) continue;
      const url = urls[i];
      bytes.set(ref.url, url ? await fetchImage(ref, i + 1, url, core.opts.imageMaxBytes, watch.signal) : dataUrlBytes(ref, i + 1, core.opts.imageMaxBytes));
      params.set(ref.url, ref.param);
    }
  } catch (err) {
    if (watch.signal.aborted && !watch.disconnected()) throw shuttingDown();
    throw err;
  } finally {
    watch.dispose();
  }
  return { bytes, params };
}

/** The checks no image needs reading for; each ref's http(s) URL (null: a data URL). */
function checkImages(core: ServerCore, refs: readonly ImageRef[]): (URL | null)[] {
  // 503 while the model loads: whether it takes images is known once it is loaded.
  const { model } = core.serving();
  const first = refs[0]!;
  if (model.info.projector === null) {
    throw refuse(first, 'the model takes no images: it was loaded without a projector (bmoe serve --mmproj FILE, or an mmproj*.gguf beside the model)', 'unsupported_value');
  }
  const max = core.opts.maxImages;
  if (refs.length > max) throw refuse(refs[max]!, `the request holds ${refs.length} images, over the limit of ${max} (bmoe serve --max-images)`);
  return refs.map((ref, i) => {
    if (/^data:/i.test(ref.url)) return null;
    const url = URL.canParse(ref.url) ? new URL(ref.url) : null;
    const web = url !== null && (url.protocol === 'http:' || url.protocol === 'https:');
    if (web && !core.opts.allowImageUrls) {
      throw refuse(ref, `image ${i + 1}: image URLs are off on this server (bmoe serve --allow-image-urls turns them on); send the image as a data URL (data:image/png;base64,...)`, 'unsupported_value');
    }
    if (!web) {
      const what = core.opts.allowImageUrls ? 'a data URL (data:image/png;base64,...) or an http(s) URL' : 'a data URL (data:image/png;base64,...)';
      throw refuse(ref, `image ${i + 1}: must be ${what}, got ${JSON.stringify(shown(ref.url))}`);
    }
    return url;
  });
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** A data URL's bytes: base64 only (an image is binary), within the limit before anything is decoded. */
function dataUrlBytes(ref: ImageRef, n: number, max: number): Uint8Array {
  const comma = ref.url.indexOf(',');
  const header = comma < 0 ? '' : ref.url.slice(5, comma);
  if (comma < 0 || !/;base64$/i.test(header)) throw refuse(ref, `image ${n}: a data URL must be base64 (data:image/png;base64,...)`);
  let body = ref.url.slice(comma + 1);
  // MIME-style base64 breaks its lines.
  if (/\s/.test(body)) body = body.replace(/\s+/g, '');
  if (!BASE64.test(body)) throw refuse(ref, `image ${n}: the data URL's base64 has characters outside base64`);
  const digits = body.replace(/=+$/, '').length;
  const bytes = Math.floor((digits * 3) / 4);
  if (bytes === 0) throw refuse(ref, `image ${n}: the data URL holds no bytes`);
  if (bytes > max) throw overLimit(ref, n, bytes, max);
  const buf = Buffer.from(body, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
}

/** An http(s) image: its body read up to the limit, within IMAGE_FETCH_TIMEOUT_MS. */
async function fetchImage(ref: ImageRef, n: number, url: URL, max: number, signal: AbortSignal): Promise<Uint8Array> {
  const timeout = AbortSignal.timeout(IMAGE_FETCH_TIMEOUT_MS);
  const failed = (err: unknown): ApiError => {
    if (timeout.aborted) return refuse(ref, `image ${n}: fetching ${shown(url.href)} took over ${IMAGE_FETCH_TIMEOUT_MS / 1000} s`);
    const cause = (err as { cause?: unknown }).cause;
    return refuse(ref, `image ${n}: could not fetch ${shown(url.href)}: ${messageOf(cause ?? err)}`);
  };
  try {
    const res = await fetch(url, { signal: AbortSignal.any([signal, timeout]), redirect: 'follow' });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw refuse(ref, `image ${n}: ${shown(url.href)} answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > max) {
      await res.body?.cancel().catch(() => undefined);
      throw overLimit(ref, n, declared, max);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (res.body) {
      for await (const chunk of res.body) {
        total += chunk.length;
        // Undeclared (chunked) or lying about its length: cut off at the limit.
        if (total > max) throw refuse(ref, `image ${n}: ${shown(url.href)} sent more than ${max} bytes, the limit (bmoe serve --image-max-bytes)`);
        chunks.push(chunk);
      }
    }
    if (total === 0) throw refuse(ref, `image ${n}: ${shown(url.href)} sent no bytes`);
    return new Uint8Array(Buffer.concat(chunks, total));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw failed(err);
  }
}
