// Who may talk to the server. The Host check stops DNS rebinding: a web page the phone's browser
// opens can point a name it controls at 127.0.0.1, but the browser still sends that name as Host,
// so a server that answers only to its own names is out of the page's reach. The key check is the
// optional bearer key. Both are used by the server and by the demo in front of it.
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { ApiError } from './errors.js';

/** Host names every server answers to, with any port: this machine's loopback names. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

export interface GuardOptions {
  /** The address the server binds (its own name is accepted as a Host). */
  host: string;
  /**
   * More Host names to accept (any port), e.g. a LAN name the phone is reached by. An entry that
   * starts with a dot accepts that domain and its subdomains ('.example.lan'). Default: none.
   */
  allowedHosts?: readonly string[];
  /** The bearer key; null or undefined = none needed. */
  apiKey?: string | null;
}

export interface RequestGuard {
  /** null when the Host header names this server, else the 403 to answer. */
  checkHost(host: string | undefined): ApiError | null;
  /**
   * null when no key is set or `Authorization: Bearer <key>` carries it, else the 401 to answer.
   * With `apiKeyHeader` (the Anthropic routes: the value of their `x-api-key` header, undefined
   * when absent), that header may carry the key instead.
   */
  checkKey(authorization: string | undefined, apiKeyHeader?: { value: string | undefined }): ApiError | null;
}

const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

/** `Example.COM:8080` → `example.com`; `[::1]:80` → `[::1]`; null when it is not a host[:port]. */
export function hostName(header: string): string | null {
  const h = header.trim().toLowerCase();
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/.exec(h);
  return m?.[1] ?? null;
}

/** How a bind address is written in a Host header: IPv6 in brackets. */
function asHostName(addr: string): string {
  const a = addr.toLowerCase();
  return isIP(a) === 6 ? `[${a}]` : a;
}

function hostMatcher(opts: GuardOptions): (name: string) => boolean {
  const exact = new Set([...LOOPBACK_HOSTS, asHostName(opts.host)]);
  const suffixes: string[] = [];
  for (const entry of opts.allowedHosts ?? []) {
    const e = entry.trim().toLowerCase();
    if (e.startsWith('.')) suffixes.push(e);
    else if (e !== '') exact.add(asHostName(e));
  }
  // Bound to every interface: clients reach it by any of the machine's addresses. An IP literal
  // cannot be a rebinding (that needs a name the attacker controls), so every IP is accepted.
  const anyIp = WILDCARD.has(opts.host.toLowerCase());
  return (name) => {
    if (exact.has(name)) return true;
    if (suffixes.some((s) => name.endsWith(s) || name === s.slice(1))) return true;
    return anyIp && isIP(name.replace(/^\[|\]$/g, '')) !== 0;
  };
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export function createRequestGuard(opts: GuardOptions): RequestGuard {
  const allowed = hostMatcher(opts);
  const keyHash = opts.apiKey ? sha256(opts.apiKey) : null;
  return {
    checkHost(header) {
      // No Host at all is not a browser (HTTP/1.0 tools); a browser always sends the name it used.
      if (header === undefined) return null;
      const name = hostName(header);
      if (name !== null && allowed(name)) return null;
      return new ApiError(
        403,
        'invalid_request_error',
        `the Host '${header.slice(0, 100)}' is not one of this server's names (localhost, 127.0.0.1, [::1], its --host, --allowed-hosts)`,
        'host_not_allowed',
      );
    },
    checkKey(authorization, apiKeyHeader) {
      if (keyHash === null) return null;
      const header = authorization ?? '';
      const m = /^Bearer\s+(.+)$/i.exec(header.trim());
      if (m?.[1] && timingSafeEqual(sha256(m[1]), keyHash)) return null;
      const xKey = apiKeyHeader?.value;
      if (xKey && timingSafeEqual(sha256(xKey), keyHash)) return null;
      const how = apiKeyHeader ? 'x-api-key: <key> or Authorization: Bearer <key>' : 'Authorization: Bearer <key>';
      return new ApiError(
        401,
        'invalid_request_error',
        header || xKey ? `invalid API key (${how} does not match --api-key)` : `missing API key: send ${how}`,
        'invalid_api_key',
        null,
        { 'www-authenticate': 'Bearer' },
      );
    },
  };
}
