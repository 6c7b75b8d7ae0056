// The two servers `bmoe-bench serve` compares, each its own process on 127.0.0.1: `bmoe serve`
// through the CLI and llama.cpp's `llama-server` built from the same pinned source. The flags each
// gets (pure, reported beside the numbers), and starting and stopping one, inside a memory cgroup
// when asked (cgroup.ts's runInCgroup: the process joins the cgroup, then becomes the server).
import { llamaToolEnv } from './peer-env.js';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { llamaToolPath } from '@bmoe/engine';
import { createMemoryCgroup, removeCgroup, runInCgroup, type CgroupRun } from './cgroup.js';
import { stderrTail } from './stderr-tail.js';

export type Side = 'bmoe' | 'llama-server';
export const SIDES: readonly Side[] = ['bmoe', 'llama-server'];

export interface ServerConfig {
  threads: number;
  /** Context per slot, tokens. */
  ctxSize: number;
  /** Slots. */
  parallel: number;
  /** bmoe streams experts (--moe-stream). */
  moeStream: boolean;
  /** bmoe's --cache-mb (with moeStream). */
  cacheMb?: number | 'auto';
  /**
   * bmoe without weight repacking (--no-repack). Otherwise bmoe gets no repack flag: it repacks by
   * default, as llama-server does, except where its settings rule says not to (a resident model
   * bigger than memory).
   */
  noRepack: boolean;
  /** The servers run inside a memory cgroup. */
  limited: boolean;
  /** Where conversations are saved: bmoe --kv-dir, llama-server --slot-save-path. */
  saveDir?: string;
}

/** `bmoe serve` flags besides the model, host and port. */
export function bmoeServeFlags(c: ServerConfig): string[] {
  return [
    '-t', String(c.threads),
    '-c', String(c.ctxSize),
    '--parallel', String(c.parallel),
    ...(c.moeStream ? ['--moe-stream'] : []),
    ...(c.moeStream && c.cacheMb !== undefined ? ['--cache-mb', String(c.cacheMb)] : []),
    ...(c.noRepack ? ['--no-repack'] : []),
    ...(c.saveDir !== undefined ? ['--kv-dir', c.saveDir] : []),
  ];
}

/**
 * `llama-server` flags besides the model, host and port: its -c is the total context the slots
 * split (KV not unified), so ctx × parallel gives each slot bmoe's per-slot context; otherwise its
 * defaults (repack on, prompt cache on, --cache-reuse 0), except -nr inside a memory cgroup, where
 * repacking would copy the weights into anonymous memory the limit cannot hold: mmap is the best
 * llama-server can do there. (bmoe decides that itself: its settings rule keeps a resident model
 * bigger than memory unrepacked.)
 */
export function llamaServerFlags(c: ServerConfig): string[] {
  return [
    '-t', String(c.threads),
    '-c', String(c.ctxSize * c.parallel),
    '-np', String(c.parallel),
    '--no-kv-unified',
    '--no-webui',
    ...(c.limited ? ['-nr'] : []),
    ...(c.saveDir !== undefined ? ['--slot-save-path', c.saveDir] : []),
  ];
}

/** The llama-server built from the pinned source; throws one line when it is not built. */
export function llamaServerTool(): string {
  const tool = llamaToolPath('llama-server');
  if (!tool) throw new Error("llama.cpp's llama-server is not built (packages/core-native/build/bin): run the setup first");
  return tool;
}

export interface StartOptions {
  side: Side;
  model: string;
  config: ServerConfig;
  /** argv prefix that runs `bmoe`. */
  bmoe: string[];
  /** The llama-server executable. */
  llamaServer: string;
  /** Memory limit of the cgroup it runs in, bytes; none: no cgroup. */
  memLimitBytes?: number;
  /** How long loading may take, ms. */
  startTimeoutMs: number;
}

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Peak memory of its cgroup (page cache included), bytes; null without one. */
  peakBytes: number | null;
  oomKilled: boolean;
}

export interface RunningServer {
  side: Side;
  /** Base URL, without /v1. */
  url: string;
  /** The flags it got (besides model, host, port). */
  flags: string[];
  /** Whether the process still runs. */
  running(): boolean;
  /** Stops it (SIGINT, SIGKILL after 5 s) and resolves how it ended. */
  stop(): Promise<ServerExit>;
  stderrTail(): string[];
}

const TAIL_LINES = 30;
let cgroups = 0;

/** A port free right now on 127.0.0.1 (llama-server takes a port, not 0). */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', resolve);
  });
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Starts one server and resolves once /health answers 200. */
export async function startServer(o: StartOptions): Promise<RunningServer> {
  const flags = o.side === 'bmoe' ? bmoeServeFlags(o.config) : llamaServerFlags(o.config);
  const port = o.side === 'bmoe' ? 0 : await freePort();
  // Without the API keys either server would take from the environment: the bench sends none.
  const argv = [
    'env', '-u', 'BMOE_API_KEY', '-u', 'LLAMA_API_KEY', ...(o.side === 'bmoe' ? [] : llamaToolEnv()),
    ...(o.side === 'bmoe'
      ? [...o.bmoe, 'serve', o.model, '--host', '127.0.0.1', '--port', '0', ...flags]
      : [o.llamaServer, '-m', o.model, '--host', '127.0.0.1', '--port', String(port), ...flags]),
  ];
  const cg = o.memLimitBytes === undefined ? null : createMemoryCgroup(o.memLimitBytes, `bmoe-bench-serve-${process.pid}-${++cgroups}`);
  const tail = stderrTail(TAIL_LINES);
  // llama-server listens on the port it was given; bmoe serve says which it took.
  const urlSeen = o.side === 'llama-server' ? Promise.resolve(`http://127.0.0.1:${port}`) : tail.url;
  const abort = new AbortController();
  const onStderr = (d: string): void => tail.feed(d);
  const run: Promise<CgroupRun> = runInCgroup(argv, cg, 24 * 3600_000, { onStderr, signal: abort.signal }).finally(() => cg && removeCgroup(cg));
  let exited: ServerExit | null = null;
  const ended = run.then(
    (r) => (exited = { code: r.code, signal: r.signal, peakBytes: r.peakBytes, oomKilled: r.oomKilled }),
    (err: unknown) => {
      tail.note(`spawn: ${err instanceof Error ? err.message : String(err)}`);
      return (exited = { code: null, signal: null, peakBytes: null, oomKilled: false });
    },
  );
  const stderrLines = (): string[] => tail.lines();
  const server: RunningServer = {
    side: o.side,
    url: '',
    flags,
    stderrTail: stderrLines,
    running: () => exited === null,
    stop: async () => {
      if (!exited) abort.abort();
      return ended;
    },
  };
  const what = o.side === 'bmoe' ? 'bmoe serve' : 'llama-server';
  const why = (): string => stderrLines().slice(-3).join(' | ');
  try {
    const url = await Promise.race([urlSeen, ended.then(() => null)]);
    if (url === null) throw new Error(`${what} exited before listening: ${why()}`);
    server.url = url;
    const deadline = Date.now() + o.startTimeoutMs;
    for (;;) {
      if (exited) throw new Error(`${what} exited while loading${(exited as ServerExit).oomKilled ? ' (killed by the OOM killer)' : ''}: ${why()}`);
      if (await healthy(url)) break;
      if (Date.now() > deadline) throw new Error(`${what} did not become healthy in ${o.startTimeoutMs / 1000} s: ${why()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return server;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}
