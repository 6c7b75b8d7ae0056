// The Hugging Face Hub's side of a pull: the endpoint and token the Hugging Face tools honour
// (HF_ENDPOINT, HF_TOKEN), a repository's file list through @huggingface/hub's `listFiles` (the tree
// API, recursive, paginated), and hub and network failures as one-line PullErrors.
import { HubApiError, listFiles } from '@huggingface/hub';
import { DEFAULT_IDLE_TIMEOUT_MS, idleResponse, startIdle } from './idle.js';
import { PullError } from './ref.js';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';
/** A repository listing longer than this is refused (a misbehaving endpoint could page forever). */
const MAX_ENTRIES = 100_000;
/**
 * Pages of one listing at most: the hub's pages hold 1000 entries (50 with expand), so MAX_ENTRIES
 * fits in 2000 pages; more means pages that are near empty, or a hub that never stops.
 */
const MAX_PAGES = 2_000;
/** Empty pages in a row that still link to a next one, at most (a hub looping on empty pages). */
const MAX_EMPTY_PAGES = 3;

export interface HubSettings {
  /** Base URL of the hub; $HF_ENDPOINT, default https://huggingface.co. */
  endpoint: string;
  /** Sent as `Authorization: Bearer` to the hub; $HF_TOKEN. */
  token: string | undefined;
}

export function hubSettings(env: NodeJS.ProcessEnv = process.env): HubSettings {
  return { endpoint: (env.HF_ENDPOINT || DEFAULT_ENDPOINT).replace(/\/+$/, ''), token: env.HF_TOKEN || undefined };
}

/** A file of a repository as the tree API lists it; `sha256` is its LFS oid (null for small git files). */
export interface RepoFile {
  path: string;
  size: number;
  sha256: string | null;
}

/** Every file of `repo` at `revision` (recursive); a page that sends nothing for `idleTimeoutMs` ends it. */
export async function listRepoFiles(hub: HubSettings, repo: string, revision: string, idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS): Promise<RepoFile[]> {
  const where = `hf:${repo}${revision === 'main' ? '' : `@${revision}`}`;
  const files: RepoFile[] = [];
  const pages = new PageGuard(where);
  try {
    // The token goes in through `fetch`: @huggingface/hub's own check would refuse a token of
    // another endpoint's shape (it wants hf_...). The same `fetch` sees every page request, so it
    // is where pagination is bounded and each page gets the idle timeout.
    const fetchPage = guardedFetch(authorizedFetch(hub), pages, idleTimeoutMs);
    const entries = listFiles({ repo: { type: 'model', name: repo }, revision, recursive: true, hubUrl: hub.endpoint, fetch: fetchPage });
    for await (const entry of entries) {
      if (++pages.entries > MAX_ENTRIES) throw new PullError(`${where}: the file list has more than ${MAX_ENTRIES} entries`);
      if (entry.type !== 'file') continue;
      const sha = entry.lfs?.oid ?? null;
      files.push({ path: entry.path, size: entry.lfs?.size ?? entry.size, sha256: sha && /^[0-9a-f]{64}$/i.test(sha) ? sha.toLowerCase() : null });
    }
  } catch (err) {
    if (err instanceof HubApiError) {
      if (err.statusCode === 404) {
        throw new PullError(`${where}: no such repository${revision === 'main' ? '' : ' or revision'} at ${hub.endpoint} (404 from ${err.url})`);
      }
      throw httpError(hub, err.statusCode, where, err.url);
    }
    throw asNetworkError(err, `${where}'s file list at ${hub.endpoint}`);
  }
  return files;
}

/**
 * Bounds a paginated listing: at most MAX_PAGES pages, no page requested twice (a next link back to
 * an earlier cursor loops), and no more than MAX_EMPTY_PAGES empty pages in a row that link onwards.
 */
class PageGuard {
  /** Entries read so far (counted by the caller as listFiles yields them). */
  entries = 0;
  private readonly requested = new Set<string>();
  private entriesBefore = 0;
  private emptyRun = 0;

  constructor(private readonly where: string) {}

  /** Called as a page is requested; listFiles asks for page N+1 only after yielding page N's entries. */
  next(url: string): void {
    if (this.requested.size > 0) this.emptyRun = this.entries === this.entriesBefore ? this.emptyRun + 1 : 0;
    if (this.emptyRun >= MAX_EMPTY_PAGES) {
      throw new PullError(`${this.where}: the hub sent ${this.emptyRun} empty pages of the file list in a row, each linking to another (next: ${url})`);
    }
    if (this.requested.has(url)) throw new PullError(`${this.where}: the file list's next-page link goes back to a page already read (${url})`);
    if (this.requested.size >= MAX_PAGES) throw new PullError(`${this.where}: the file list goes on past ${MAX_PAGES} pages (${this.entries} entries so far); refused`);
    this.requested.add(url);
    this.entriesBefore = this.entries;
  }
}

/** `fetch` for listing pages: each one checked by `pages` and cut after `idleMs` without data. */
function guardedFetch(inner: typeof fetch, pages: PageGuard, idleMs: number): typeof fetch {
  return async (input, init) => {
    pages.next(input instanceof Request ? input.url : String(input));
    const idle = startIdle(idleMs);
    try {
      return idleResponse(await inner(input, { ...init, signal: idle.signal }), idle);
    } catch (err) {
      idle.stop();
      throw idle.signal.aborted ? idle.signal.reason : err;
    }
  };
}

/** fetch with the hub's token as a Bearer header (only to the hub's own origin). */
export function authorizedFetch(hub: HubSettings): typeof fetch {
  const origin = new URL(hub.endpoint).origin;
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!hub.token || url.origin !== origin) return fetch(input, init);
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${hub.token}`);
    return fetch(input, { ...init, headers });
  };
}

/** The one-line error for an HTTP failure `status` while fetching `what` from `url`. */
export function httpError(hub: HubSettings, status: number, what: string, url: string): PullError {
  const at = `(${status} from ${url})`;
  if (status === 401) {
    return new PullError(
      hub.token ? `${what}: HF_TOKEN was not accepted ${at}` : `${what} needs a token: set HF_TOKEN (or the repository does not exist) ${at}`,
    );
  }
  if (status === 403) return new PullError(`${what}: access denied; a gated repository needs its terms accepted on the hub and HF_TOKEN set ${at}`);
  if (status === 404) return new PullError(`${what}: not found ${at}`);
  return new PullError(`${what}: the server answered ${status} ${at}`);
}

/** A failed fetch (refused, reset, DNS, TLS) as one line naming `what`; PullErrors pass through. */
export function asNetworkError(err: unknown, what: string): Error {
  if (err instanceof PullError) return err;
  return new PullError(`cannot fetch ${what}: ${networkReason(err)}`);
}

/** `connect ECONNREFUSED 127.0.0.1:9` rather than undici's bare `fetch failed`. */
export function networkReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    const msg = cause.message || code || err.message;
    return code && !msg.includes(code) ? `${msg} (${code})` : msg;
  }
  return err.message;
}
