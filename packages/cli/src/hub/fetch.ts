// One GET of a download: redirects followed by hand so that the hub's token never leaves the hub's
// origin (a resolve URL redirects to a CDN with a signed URL) and so that the hub's own headers on
// the redirect — X-Linked-Etag (the LFS sha256) and X-Linked-Size — are seen.
import { asNetworkError, httpError, type HubSettings } from './hub-api.js';
import { PullError } from './ref.js';

const MAX_REDIRECTS = 10;

export interface OpenOptions {
  /** Resume from this byte (a `Range: bytes=N-` request). */
  offset: number;
  /** Validator for If-Range: a changed file then comes back whole (200) instead of partial. */
  ifRange: string | null;
  signal: AbortSignal;
}

export interface Opened {
  response: Response;
  /** The sha256 a hop published (X-Linked-Etag, or a 64-hex ETag), lower case, or null. */
  linkedSha256: string | null;
  /** X-Linked-Size of a hop, or null. */
  linkedSize: number | null;
  /** The final response's strong ETag, for If-Range on a later resume. */
  etag: string | null;
}

const SHA256 = /^(?:W\/)?"?([0-9a-f]{64})"?$/i;

/** GET `url` (following redirects); a non-2xx final answer other than 416 is a PullError. */
export async function openDownload(hub: HubSettings, url: string, what: string, o: OpenOptions): Promise<Opened> {
  const hubOrigin = new URL(hub.endpoint).origin;
  let current = new URL(url);
  let linkedSha256: string | null = null;
  let linkedSize: number | null = null;
  for (let hop = 0; ; hop++) {
    const headers = new Headers({ 'accept-encoding': 'identity' });
    if (hub.token && current.origin === hubOrigin) headers.set('authorization', `Bearer ${hub.token}`);
    if (o.offset > 0) {
      headers.set('range', `bytes=${o.offset}-`);
      if (o.ifRange) headers.set('if-range', o.ifRange);
    }
    let res: Response;
    try {
      res = await fetch(current, { headers, redirect: 'manual', signal: o.signal });
    } catch (err) {
      throw asNetworkError(o.signal.aborted ? o.signal.reason : err, `${what} from ${current.href}`);
    }
    linkedSha256 ??= SHA256.exec(res.headers.get('x-linked-etag') ?? '')?.[1]?.toLowerCase() ?? null;
    const size = Number(res.headers.get('x-linked-size') ?? NaN);
    if (linkedSize === null && Number.isSafeInteger(size) && size >= 0) linkedSize = size;
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new PullError(`${what}: more than ${MAX_REDIRECTS} redirects from ${url}`);
      current = new URL(location, current);
      continue;
    }
    if (!res.ok && res.status !== 416) {
      await res.body?.cancel();
      throw httpError(hub, res.status, what, current.href);
    }
    const etag = res.headers.get('etag');
    linkedSha256 ??= SHA256.exec(etag ?? '')?.[1]?.toLowerCase() ?? null;
    return { response: res, linkedSha256, linkedSize, etag: etag && !etag.startsWith('W/') ? etag : null };
  }
}

/** `Content-Range: bytes START-END/TOTAL` → { start, total } (total null when `*`). */
export function contentRange(res: Response): { start: number; total: number | null } | null {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
  if (!m) return null;
  return { start: Number(m[1]), total: m[2] === '*' ? null : Number(m[2]) };
}
