// `bmoe-bench soak`: `bmoe serve` as its own process on 127.0.0.1, K concurrent clients for a
// bounded time sending a random mix of valid requests (streamed and not, some abandoned
// mid-stream) and hostile ones (oversized bodies, malformed JSON, invalid fields, hostile grammars,
// JSON schemas and tools) and heavy structured output within the bounds. Reports requests served,
// every outcome by kind, the server's RSS at start and end, /health's latency probed once a second
// throughout, and fails on a crash, an answer a healthy server does not give, /health not 200
// (within 5 s) during or after the soak, an unclean stop, or RSS growth beyond a bound.
import OpenAI from 'openai';
import type { Outcome, RequestContext } from './soak-context.js';
import { ALLOWED, SOAK_KINDS, sendRequest, type Sent, type SoakKind } from './soak-requests.js';
import { VARIANTS, type StructuredKind } from './soak-structured.js';
import { readRssBytes, startServeProcess, type ServeProcess, type ServerExit } from './soak-server.js';

export interface SoakOptions {
  /** argv prefix that runs `bmoe`. */
  bmoe: string[];
  model: string;
  /** How long clients keep sending, s (each client sends every kind once, however long that takes). Default 60. */
  seconds?: number;
  /** Concurrent clients. Default 4. */
  clients?: number;
  /** Largest allowed RSS growth of the server from start (after a warm-up) to end, MiB. Default 128. */
  maxRssGrowthMb?: number;
  /** Seed of the request mix. Default: random (reported). */
  seed?: number;
  /** Extra `bmoe serve` flags. Default ['-t', '2']. */
  serveFlags?: string[];
  /** Per-request limit, ms: a request slower than this counts as a freeze. Default 60 s. */
  requestTimeoutMs?: number;
  log?: (line: string) => void;
  /** Called with the server's pid once it is healthy (tests kill it from here). */
  onServerStart?: (pid: number) => void;
}

export interface SoakKindStats {
  sent: number;
  /** Outcome ('200', '413', 'aborted', …) → count. */
  outcomes: Record<Outcome, number>;
  /** Structured kinds: requests sent per variant (soak-structured.ts). */
  variants?: Record<string, number>;
}

/** /health probed once a second while the clients send. */
export interface SoakHealth {
  probes: number;
  /** Probes not answered 200 within limitMs. */
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
  maxMs: number | null;
  limitMs: number;
  /** The first failures ('t+12.3 s: 503', 't+40.1 s: no answer in 5 s'). */
  examples: string[];
}

export interface SoakReport {
  model: string;
  url: string;
  serverPid: number;
  seed: number;
  clients: number;
  plannedSeconds: number;
  elapsedSeconds: number;
  /** Requests sent (warm-up excluded). */
  requests: number;
  /** Requests answered 2xx in full. */
  served: number;
  byKind: Record<SoakKind, SoakKindStats>;
  /** Every outcome that is not a 2xx, over all kinds. */
  errorsByStatus: Record<Outcome, number>;
  /** Outcomes a healthy server does not give the kind (500, stream cut, reset, timeout, …). */
  unexpected: { count: number; examples: string[] };
  rss: {
    startBytes: number | null;
    endBytes: number | null;
    peakBytes: number | null;
    growthBytes: number | null;
    maxGrowthBytes: number;
    /** Every 30 s of the soak: whether RSS levels off or keeps climbing. */
    samples: { seconds: number; bytes: number }[];
  };
  health: SoakHealth;
  server: { crashed: boolean; exit: ServerExit | null; healthAtEnd: number | null; stoppedCleanly: boolean; stderrTail: string[] };
  failures: string[];
  ok: boolean;
}

const MiB = 1024 * 1024;
const STOP_GRACE_MS = 15_000;
export const DEFAULT_SOAK = { seconds: 60, clients: 4, maxRssGrowthMb: 128, requestTimeoutMs: 60_000 } as const;

/** Relative weights of the kinds after each client's first round (which sends every kind once). */
const WEIGHTS: Record<SoakKind, number> = {
  'chat-stream': 3, chat: 2, completion: 2, disconnect: 2, oversized: 1, malformed: 2, 'bad-field': 2, probe: 1,
  'hostile-grammar': 2, 'hostile-schema': 2, 'hostile-tools': 1, 'heavy-grammar': 1,
};
const HEALTH_EVERY_MS = 1000;
const HEALTH_LIMIT_MS = 5000;

/** mulberry32: small, seedable, good enough to vary a request mix reproducibly. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function weighted(random: () => number): SoakKind {
  const total = SOAK_KINDS.reduce((s, k) => s + WEIGHTS[k], 0);
  let x = random() * total;
  for (const k of SOAK_KINDS) if ((x -= WEIGHTS[k]) < 0) return k;
  return 'chat-stream';
}

const isStructured = (k: SoakKind): k is StructuredKind => k in VARIANTS;

class Tally {
  readonly byKind = Object.fromEntries(SOAK_KINDS.map((k) => [k, isStructured(k) ? { sent: 0, outcomes: {}, variants: {} } : { sent: 0, outcomes: {} }])) as Record<SoakKind, SoakKindStats>;
  readonly examples: string[] = [];
  unexpected = 0;

  add(kind: SoakKind, { outcome, variant, label }: Sent): void {
    const s = this.byKind[kind];
    s.sent++;
    s.outcomes[outcome] = (s.outcomes[outcome] ?? 0) + 1;
    if (s.variants && variant !== undefined) s.variants[variant] = (s.variants[variant] ?? 0) + 1;
    if (!ALLOWED[kind].includes(outcome)) {
      this.unexpected++;
      if (this.examples.length < 5) this.examples.push(`${kind}${label === undefined ? '' : ` (${label})`}: ${outcome}`);
    }
  }
}

const quantile = (sorted: number[], q: number): number | null => (sorted.length === 0 ? null : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number));

/** Probes /health every second until `done` resolves; a probe cut by `stop` (the server died) is not counted. */
async function watchHealth(url: string, stop: AbortSignal, done: Promise<void>): Promise<SoakHealth> {
  const ms: number[] = [];
  const examples: string[] = [];
  let failed = 0;
  let finished = false;
  let wake: () => void = () => undefined;
  void done.then(() => {
    finished = true;
    wake();
  });
  const t0 = performance.now();
  while (!finished && !stop.aborted) {
    const start = performance.now();
    const status = await fetch(`${url}/health`, { signal: AbortSignal.any([AbortSignal.timeout(HEALTH_LIMIT_MS), stop]) }).then(
      async (r) => (await r.arrayBuffer(), r.status),
      () => null,
    );
    if (stop.aborted) break;
    const took = performance.now() - start;
    ms.push(took);
    if (status !== 200) {
      failed++;
      if (examples.length < 5) examples.push(`t+${((start - t0) / 1000).toFixed(1)} s: ${status ?? `no answer in ${HEALTH_LIMIT_MS / 1000} s`}`);
    }
    await new Promise<void>((r) => {
      const timer = setTimeout(r, Math.max(0, HEALTH_EVERY_MS - took));
      wake = () => {
        clearTimeout(timer);
        r();
      };
    });
  }
  const sorted = [...ms].sort((a, b) => a - b);
  return { probes: ms.length, failed, p50Ms: quantile(sorted, 0.5), p95Ms: quantile(sorted, 0.95), maxMs: sorted.at(-1) ?? null, limitMs: HEALTH_LIMIT_MS, examples };
}

/** Runs one soak; throws only when the server cannot be started or does not answer a first request. */
export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const seconds = o.seconds ?? DEFAULT_SOAK.seconds;
  const clients = o.clients ?? DEFAULT_SOAK.clients;
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
  const log = o.log ?? (() => undefined);
  const server = await startServeProcess({ bmoe: o.bmoe, model: o.model, flags: o.serveFlags ?? ['-t', '2'] });
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: o.requestTimeoutMs ?? DEFAULT_SOAK.requestTimeoutMs });
    const model = (await client.models.list()).data[0]?.id;
    if (!model) throw new Error(`${server.url}/v1/models lists no model`);
    // Lazy initialisation is not growth: RSS counts from after one answer of each shape.
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 4, temperature: 0 });
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'warm-up' }], max_tokens: 4, temperature: 0, stream: true }).then(async (s) => {
      for await (const _chunk of s);
    });
    await warmStructured(server.url, model);
    o.onServerStart?.(server.pid);
    log(`soak: ${clients} clients for ${seconds} s against bmoe serve (pid ${server.pid}) at ${server.url}, model ${model}, seed ${seed}`);
    return await soakServer(o, server, client, model, { seconds, clients, seed });
  } catch (err) {
    await server.stop(STOP_GRACE_MS);
    throw err;
  }
}

/** One answer under a grammar and one under a JSON schema (their converters and samplers start lazily). */
async function warmStructured(url: string, model: string): Promise<void> {
  const messages = [{ role: 'user', content: 'warm-up' }];
  const schema = { type: 'object', properties: { a: { type: 'string' } } };
  for (const extra of [{ grammar: 'root ::= "a"{1,4}' }, { response_format: { type: 'json_schema', json_schema: { name: 'warm', schema } } }]) {
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, messages, max_tokens: 4, ...extra }) });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the structured warm-up answered ${res.status}`);
  }
}

const RSS_SAMPLE_EVERY_S = 30;

interface Run {
  tally: Tally;
  elapsedSeconds: number;
  rss: { start: number | null; peak: number | null; samples: { seconds: number; bytes: number }[] };
  health: SoakHealth;
}

/** The clients' loop: until the deadline, or until the server dies. */
async function drive(o: SoakOptions, server: ServeProcess, client: OpenAI, model: string, p: { seconds: number; clients: number; seed: number }): Promise<Run> {
  const rss: Run['rss'] = { start: readRssBytes(server.pid), peak: readRssBytes(server.pid), samples: [] };
  const sampledFrom = performance.now();
  const sampler = setInterval(() => {
    const now = readRssBytes(server.pid);
    if (now === null) return;
    rss.peak = Math.max(rss.peak ?? 0, now);
    const seconds = Math.round((performance.now() - sampledFrom) / 1000);
    if (seconds >= (rss.samples.length + 1) * RSS_SAMPLE_EVERY_S) rss.samples.push({ seconds, bytes: now });
  }, 1000);
  const stop = new AbortController();
  void server.exited.then(() => stop.abort());
  const tally = new Tally();
  let clientsDone: () => void = () => undefined;
  const health = watchHealth(server.url, stop.signal, new Promise<void>((r) => (clientsDone = r)));
  const t0 = performance.now();
  const deadline = Date.now() + p.seconds * 1000;
  const timeoutMs = o.requestTimeoutMs ?? DEFAULT_SOAK.requestTimeoutMs;
  await Promise.all(
    Array.from({ length: p.clients }, async (_, i) => {
      const ctx: RequestContext = { url: server.url, client, model, random: prng(p.seed + i), timeoutMs, stop: stop.signal };
      // Every kind once first (each client in its own order, even past the deadline), then a random mix.
      for (let n = 0; (n < SOAK_KINDS.length || Date.now() < deadline) && !stop.signal.aborted; n++) {
        const kind = n < SOAK_KINDS.length ? (SOAK_KINDS[(n + i) % SOAK_KINDS.length] as SoakKind) : weighted(ctx.random);
        const sent = await sendRequest(kind, ctx);
        // A request cut by the soak's own early stop says nothing about the server beyond its exit.
        if (!stop.signal.aborted) tally.add(kind, sent);
      }
    }),
  );
  const elapsedSeconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  clientsDone();
  return { tally, elapsedSeconds, rss, health: await health };
}

async function soakServer(o: SoakOptions, server: ServeProcess, client: OpenAI, model: string, p: { seconds: number; clients: number; seed: number }): Promise<SoakReport> {
  const { tally, elapsedSeconds, rss, health } = await drive(o, server, client, model, p);
  const endRss = readRssBytes(server.pid);
  const crashedExit = server.exit();
  const healthAtEnd = crashedExit ? null : await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5000) }).then((r) => r.status, () => null);
  const stopped = crashedExit ? null : await server.stop(STOP_GRACE_MS);
  const sum = (pred: (outcome: string) => boolean): number =>
    SOAK_KINDS.reduce((s, k) => s + Object.entries(tally.byKind[k].outcomes).reduce((a, [outcome, n]) => a + (pred(outcome) ? n : 0), 0), 0);
  const report: SoakReport = {
    model,
    url: server.url,
    serverPid: server.pid,
    seed: p.seed,
    clients: p.clients,
    plannedSeconds: p.seconds,
    elapsedSeconds,
    requests: sum(() => true),
    served: sum((outcome) => /^2\d\d$/.test(outcome)),
    byKind: tally.byKind,
    errorsByStatus: errorsByStatus(tally),
    unexpected: { count: tally.unexpected, examples: tally.examples },
    rss: {
      startBytes: rss.start,
      endBytes: endRss,
      peakBytes: rss.peak === null || endRss === null ? rss.peak : Math.max(rss.peak, endRss),
      growthBytes: rss.start !== null && endRss !== null ? endRss - rss.start : null,
      maxGrowthBytes: (o.maxRssGrowthMb ?? DEFAULT_SOAK.maxRssGrowthMb) * MiB,
      samples: rss.samples,
    },
    health,
    server: {
      crashed: crashedExit !== null,
      exit: crashedExit ?? stopped?.exit ?? null,
      healthAtEnd,
      stoppedCleanly: stopped !== null && stopped.clean && stopped.exit.code === 0,
      stderrTail: server.stderrTail(),
    },
    failures: [],
    ok: false,
  };
  report.failures = soakFailures(report);
  report.ok = report.failures.length === 0;
  return report;
}

function errorsByStatus(t: Tally): Record<Outcome, number> {
  const out: Record<Outcome, number> = {};
  for (const k of SOAK_KINDS) {
    for (const [outcome, n] of Object.entries(t.byKind[k].outcomes)) if (!/^2\d\d$/.test(outcome)) out[outcome] = (out[outcome] ?? 0) + n;
  }
  return out;
}

const describeExit = (e: ServerExit | null): string => (e === null ? 'still running' : e.signal ? `signal ${e.signal}` : `exit ${e.code}`);
const mib = (b: number | null): string => (b === null ? 'unmeasured' : `${(b / MiB).toFixed(1)} MiB`);

/** What makes a soak fail, one line each (none: it passed). */
export function soakFailures(r: SoakReport): string[] {
  const f: string[] = [];
  if (r.server.crashed) {
    f.push(`the server died ${r.elapsedSeconds.toFixed(1)} s into the soak (${describeExit(r.server.exit)}): ${r.server.stderrTail.slice(-2).join(' | ') || 'no output'}`);
  } else {
    if (r.server.healthAtEnd !== 200) f.push(`/health answered ${r.server.healthAtEnd ?? 'nothing'} after the soak`);
    if (!r.server.stoppedCleanly) f.push(`the server did not exit 0 within ${STOP_GRACE_MS / 1000} s of SIGTERM (${describeExit(r.server.exit)})`);
  }
  if (r.health.failed > 0) {
    f.push(`/health did not answer 200 within ${r.health.limitMs / 1000} s ${r.health.failed} of ${r.health.probes} times during the soak (${r.health.examples.join(', ')})`);
  }
  if (r.unexpected.count > 0) f.push(`${r.unexpected.count} answers a healthy server does not give (${r.unexpected.examples.join(', ')})`);
  if (r.served === 0) f.push('no request was served');
  if (r.rss.growthBytes !== null && r.rss.growthBytes > r.rss.maxGrowthBytes) {
    f.push(`server RSS grew ${mib(r.rss.growthBytes)} (${mib(r.rss.startBytes)} → ${mib(r.rss.endBytes)}), more than the ${mib(r.rss.maxGrowthBytes)} allowed`);
  }
  return f;
}

const counts = (o: Record<string, number>): string =>
  Object.entries(o)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ×${n}`)
    .join(', ') || 'none';

const ms = (v: number | null): string => (v === null ? 'unmeasured' : `${v.toFixed(1)} ms`);
/** ' (9/12 variants)' for the structured kinds. */
const variantsSent = (k: SoakKind, s: SoakKindStats): string => (isStructured(k) && s.variants ? ` (${Object.keys(s.variants).length}/${VARIANTS[k].length} variants)` : '');

export function soakReport(r: SoakReport): string {
  const growth = r.rss.growthBytes === null ? 'unmeasured' : `${r.rss.growthBytes >= 0 ? '+' : ''}${mib(r.rss.growthBytes)}`;
  return [
    `soak: ${r.clients} clients for ${r.elapsedSeconds.toFixed(1)} s (planned ${r.plannedSeconds} s), model ${r.model}, bmoe serve pid ${r.serverPid} at ${r.url}, seed ${r.seed}`,
    `requests: ${r.requests} sent, ${r.served} served (2xx in full)`,
    ...SOAK_KINDS.map((k) => `  ${k.padEnd(15)} ${String(r.byKind[k].sent).padStart(6)}: ${counts(r.byKind[k].outcomes)}${variantsSent(k, r.byKind[k])}`),
    `errors by status: ${counts(r.errorsByStatus)}`,
    `/health during the soak: ${r.health.probes} probes, ${ms(r.health.p50Ms)} median, ${ms(r.health.p95Ms)} p95, ${ms(r.health.maxMs)} max, ${r.health.failed} not 200 within ${r.health.limitMs / 1000} s`,
    `server RSS: start ${mib(r.rss.startBytes)}, end ${mib(r.rss.endBytes)} (${growth}; bound +${mib(r.rss.maxGrowthBytes)}), peak ${mib(r.rss.peakBytes)}`,
    ...(r.rss.samples.length > 0 ? [`server RSS every ${RSS_SAMPLE_EVERY_S} s: ${r.rss.samples.map((x) => `${x.seconds} s ${(x.bytes / MiB).toFixed(1)}`).join(', ')} MiB`] : []),
    `server: ${r.server.crashed ? `DIED (${describeExit(r.server.exit)})` : `/health ${r.server.healthAtEnd ?? 'no answer'} at the end, ${describeExit(r.server.exit)} on SIGTERM`}`,
    r.ok ? 'result: ok' : `result: FAILED: ${r.failures.join('; ')}`,
  ].join('\n');
}
