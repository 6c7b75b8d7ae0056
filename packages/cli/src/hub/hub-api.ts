// The Hugging Face Hub's side of a pull: the endpoint and token the Hugging Face tools honour
// (HF_ENDPOINT, HF_TOKEN), a repository's file list through @huggingface/hub's `listFiles` (the tree
// API, recursive, paginated), and hub and network failures as one-line PullErrors.
import { HubApiError, listFiles } from '@huggingface/hub';
import { PullError } from './ref.js';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';
/** A repository listing longer than this is refused (a misbehaving endpoint could page forever). */
const MAX_ENTRIES = 100_000;

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

/** Every file of `repo` at `revision` (recursive). */
export async function listRepoFiles(hub: HubSettings, repo: string, revision: string): Promise<RepoFile[]> {
  const where = `hf:${repo}${revision === 'main' ? '' : `@${revision}`}`;
  const files: RepoFile[] = [];
  let seen = 0;
  try {
    // The token goes in through `fetch`: @huggingface/hub's own check would refuse a token of
    // another endpoint's shape (it wants hf_...).
    const entries = listFiles({ repo: { type: 'model', name: repo }, revision, recursive: true, hubUrl: hub.endpoint, fetch: authorizedFetch(hub) });
    for await (const entry of entries) {
      if (++seen > MAX_ENTRIES) throw new PullError(`${where}: the file list has more than ${MAX_ENTRIES} entries`);
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
