// A Hugging Face Hub on loopback for `bmoe pull`'s tests, answering the URL shapes the real hub does:
//   GET /api/models/{owner}/{repo}/tree/{rev}[/{path}]?recursive=  JSON entries with lfs.oid (sha256),
//       paginated with a Link: <…>; rel="next" header (pageSize entries a page)
//   GET /{owner}/{repo}/resolve/{rev}/{path}  302 to the CDN with X-Linked-Etag / X-Linked-Size
//   GET {cdn}/cdn/{owner}/{repo}/{path}       the bytes: ETag, Range (206), If-Range, 416
// The CDN is a second listener (another port: another origin, as on the real hub, where the token
// must not follow the redirect).
// Repositories may require a token (401 without it), missing ones are 404 with X-Error-Code, and a
// download can be cut mid-body (the socket destroyed after N bytes) or served corrupted.
// Hostile behaviours for the hardening tests: a tree listing that loops (empty pages linking to
// themselves or onwards, endless pages) or stalls (no answer, or half a page); a file body that
// stalls, comes as an HTML page (a login or proxy page with 200), or from a plain server with no
// ETag that honours Range whatever changed.
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HubFile {
  path: string;
  data: Buffer;
  /** Serve these bytes instead of `data` (the tree still publishes sha256(data)): a wrong checksum. */
  served?: Buffer;
  /** Serve this HTML page instead (200, chunked, no Content-Length), with `htmlType` ('' for none). */
  html?: string;
  htmlType?: string;
  /** A plain file server: no ETag (nor If-Range: a Range is honoured even if the file changed). */
  noEtag?: boolean;
}

/**
 * How the tree API misbehaves: empty pages whose next link is the page itself (`repeat-empty`) or a
 * new cursor each time (`empty-pages`); one new entry a page, never ending (`endless`); no answer at
 * all (`no-answer`); headers and half a page, then nothing (`stall-body`).
 */
export type TreeTrouble = 'repeat-empty' | 'empty-pages' | 'endless' | 'no-answer' | 'stall-body';

export interface HubRepo {
  files: HubFile[];
  /** When set, every request needs `Authorization: Bearer <token>` (else 401). */
  token?: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface FakeHub {
  /** http://127.0.0.1:PORT — what HF_ENDPOINT is set to. */
  url: string;
  /** The CDN's origin, http://127.0.0.1:OTHER_PORT. */
  cdnUrl: string;
  repos: Map<string, HubRepo>;
  requests: RecordedRequest[];
  /** Tree entries per page. Default 1000. */
  pageSize: number;
  /** Misbehaviour of every tree request, or null (the default). */
  treeTrouble: TreeTrouble | null;
  /** The next download of `repo`/`path` sends `bytes` bytes of its body, then the connection is cut. */
  cutNext(repo: string, path: string, bytes: number): void;
  /** The next download of `repo`/`path` sends `bytes` bytes of its body, then nothing (the connection stays open). */
  stallNext(repo: string, path: string, bytes: number): void;
  close(): Promise<void>;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

interface Cut {
  bytes: number;
  /** Leave the connection open instead of destroying it. */
  stall: boolean;
}

export async function startFakeHub(repos: Record<string, HubRepo>): Promise<FakeHub> {
  const cuts = new Map<string, Cut>();
  const hub: FakeHub = {
    url: '',
    cdnUrl: '',
    repos: new Map(Object.entries(repos)),
    requests: [],
    pageSize: 1000,
    treeTrouble: null,
    cutNext: (repo, path, bytes) => void cuts.set(`${repo}/${path}`, { bytes, stall: false }),
    stallNext: (repo, path, bytes) => void cuts.set(`${repo}/${path}`, { bytes, stall: true }),
    close: async () => {
      // Stalled responses would keep close() waiting for ever.
      for (const s of [server, cdnServer]) s.closeAllConnections();
      await Promise.all([server, cdnServer].map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://x');
    hub.requests.push({ method: req.method ?? 'GET', path: url.pathname + url.search, headers: req.headers });
    const parts = url.pathname.split('/').slice(1).map(decodeURIComponent);
    const [a, b, c, d] = parts;
    if (a === 'api' && b === 'models' && parts[4] === 'tree') return tree(hub, req, res, url, `${c}/${d}`, parts.slice(5));
    if (a === 'cdn') return cdn(hub, req, res, cuts, `${b}/${c}`, parts.slice(3).join('/'));
    if (c === 'resolve') return resolve(hub, req, res, `${a}/${b}`, parts[3] ?? '', parts.slice(4).join('/'));
    json(res, 404, { error: 'Not found' });
  };
  const server: Server = createServer(handler);
  const cdnServer: Server = createServer(handler);
  for (const s of [server, cdnServer]) {
    s.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  }
  hub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hub.cdnUrl = `http://127.0.0.1:${(cdnServer.address() as AddressInfo).port}`;
  return hub;
}

/** The repository, or null after answering 401 / 404 as the hub does. */
function repoFor(hub: FakeHub, req: IncomingMessage, res: ServerResponse, name: string): HubRepo | null {
  const repo = hub.repos.get(name);
  if (!repo) {
    json(res, 404, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
    return null;
  }
  if (repo.token && req.headers.authorization !== `Bearer ${repo.token}`) {
    json(res, 401, { error: 'Invalid credentials in Authorization header' });
    return null;
  }
  return repo;
}

function tree(hub: FakeHub, req: IncomingMessage, res: ServerResponse, url: URL, name: string, rest: string[]): void {
  const repo = repoFor(hub, req, res, name);
  if (!repo) return;
  if (hub.treeTrouble !== null) return troubledTree(hub, res, url, hub.treeTrouble);
  if (rest[0] !== 'main') return json(res, 404, { error: 'Revision not found' }, { 'x-error-code': 'RevisionNotFound' });
  const prefix = rest.slice(1).join('/');
  const recursive = url.searchParams.get('recursive') === 'true';
  const entries = new Map<string, object>();
  for (const f of repo.files) {
    if (prefix && !f.path.startsWith(`${prefix}/`)) continue;
    const rel = prefix ? f.path.slice(prefix.length + 1) : f.path;
    const dirs = rel.split('/').slice(0, -1);
    // Directories along the way, as the tree API lists them.
    for (let i = 1; i <= dirs.length && (recursive || i === 1); i++) {
      const p = [prefix, ...dirs.slice(0, i)].filter(Boolean).join('/');
      entries.set(p, { type: 'directory', oid: sha256(Buffer.from(p)).slice(0, 40), size: 0, path: p });
    }
    if (!recursive && dirs.length > 0) continue;
    const oid = sha256(f.data);
    entries.set(f.path, { type: 'file', oid: oid.slice(0, 40), size: f.data.length, path: f.path, lfs: { oid, size: f.data.length, pointerSize: 134 } });
  }
  const all = [...entries.values()];
  const cursor = Number(url.searchParams.get('cursor') ?? 0);
  const page = all.slice(cursor, cursor + hub.pageSize);
  const headers: Record<string, string> = {};
  if (cursor + hub.pageSize < all.length) {
    const next = new URL(url.pathname + url.search, hub.url);
    next.searchParams.set('cursor', String(cursor + hub.pageSize));
    headers.link = `<${next.href}>; rel="next"`;
  }
  json(res, 200, page, headers);
}

function troubledTree(hub: FakeHub, res: ServerResponse, url: URL, trouble: TreeTrouble): void {
  if (trouble === 'no-answer') return;
  if (trouble === 'stall-body') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.write('[{"type":"file","path":"a.gguf",');
  }
  const cursor = Number(url.searchParams.get('cursor') ?? 0);
  const next = new URL(url.pathname + url.search, hub.url);
  if (trouble !== 'repeat-empty') next.searchParams.set('cursor', String(cursor + 1));
  const page = trouble === 'endless' ? [{ type: 'directory', oid: '0'.repeat(40), size: 0, path: `d${cursor}` }] : [];
  json(res, 200, page, { link: `<${next.href}>; rel="next"` });
}

function resolve(hub: FakeHub, req: IncomingMessage, res: ServerResponse, name: string, rev: string, path: string): void {
  const repo = repoFor(hub, req, res, name);
  if (!repo) return;
  const file = rev === 'main' ? repo.files.find((f) => f.path === path) : undefined;
  if (!file) return json(res, 404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
  const oid = sha256(file.data);
  res.writeHead(302, {
    location: `${hub.cdnUrl}/cdn/${name}/${path.split('/').map(encodeURIComponent).join('/')}`,
    'x-linked-etag': `"${oid}"`,
    'x-linked-size': String(file.data.length),
    etag: `"${oid.slice(0, 40)}"`,
  });
  res.end();
}

function cdn(hub: FakeHub, req: IncomingMessage, res: ServerResponse, cuts: Map<string, Cut>, name: string, path: string): void {
  const file = hub.repos.get(name)?.files.find((f) => f.path === path);
  if (!file) return json(res, 404, { error: 'Not found' });
  if (file.html !== undefined) {
    const type = file.htmlType ?? 'text/html; charset=utf-8';
    res.writeHead(200, type === '' ? {} : { 'content-type': type });
    return void res.end(file.html);
  }
  const body = file.served ?? file.data;
  const etag = file.noEtag ? undefined : `"${sha256(body)}"`;
  let start = 0;
  let status = 200;
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const ifRange = req.headers['if-range'];
  if (range && (ifRange === undefined || ifRange === etag)) {
    start = Number(range[1]);
    if (start >= body.length) {
      res.writeHead(416, { 'content-range': `bytes */${body.length}` });
      return void res.end();
    }
    status = 206;
  }
  const headers: Record<string, string> = { 'accept-ranges': 'bytes', 'content-length': String(body.length - start), 'content-type': 'application/octet-stream' };
  if (etag !== undefined) headers.etag = etag;
  if (status === 206) headers['content-range'] = `bytes ${start}-${body.length - 1}/${body.length}`;
  res.writeHead(status, headers);
  const cut = cuts.get(`${name}/${path}`);
  if (cut === undefined) return void res.end(body.subarray(start));
  cuts.delete(`${name}/${path}`);
  const sent = body.subarray(start, start + cut.bytes);
  if (cut.stall) return void res.write(sent);
  // Cut a moment after the bytes went out, so the client has read them (as after a real drop).
  res.write(sent, () => setTimeout(() => res.socket?.destroy(), 300));
}
