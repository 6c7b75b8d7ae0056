// The server under soak: `bmoe serve` as its own process on 127.0.0.1 and a free port, so its RSS
// is its own and a crash (a signal, an abort) is seen from outside instead of taking the soak down.
import { spawn, type ChildProcess } from 'node:child_process';
import { readProcessMemory } from './pressure.js';
import { stderrTail } from './stderr-tail.js';

export interface ServeProcessOptions {
  /** argv prefix that runs `bmoe`. */
  bmoe: string[];
  model: string;
  /** Extra `bmoe serve` flags (threads, streaming, queue). */
  flags: string[];
  /** How long loading may take before giving up, ms. Default 180 s. */
  startTimeoutMs?: number;
}

export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServeProcess {
  pid: number;
  /** Base URL, without /v1. */
  url: string;
  /** Resolves when the process ends, however it ends. */
  exited: Promise<ServerExit>;
  /** Null while it runs. */
  exit(): ServerExit | null;
  /** The last lines it wrote on stderr. */
  stderrTail(): string[];
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended and whether that was within the grace. */
  stop(graceMs: number): Promise<{ exit: ServerExit; clean: boolean }>;
}

const TAIL_LINES = 20;

/** The process's resident set (VmRSS) from /proc, bytes; null where unreadable (not Linux, gone). */
export function readRssBytes(pid: number): number | null {
  return readProcessMemory(pid, 'VmRSS');
}

const oneLine = (lines: string[]): string => lines.slice(-3).join(' | ');

/** Starts `bmoe serve MODEL --host 127.0.0.1 --port 0 …` and resolves once /health answers 200. */
export async function startServeProcess(o: ServeProcessOptions): Promise<ServeProcess> {
  const [cmd, ...pre] = o.bmoe;
  if (!cmd) throw new Error('no bmoe command to start the server with');
  const child: ChildProcess = spawn(cmd, [...pre, 'serve', o.model, '--host', '127.0.0.1', '--port', '0', ...o.flags], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, BMOE_API_KEY: '' },
  });
  const tail = stderrTail(TAIL_LINES);
  const urlSeen = tail.url;
  child.stderr?.setEncoding('utf8').on('data', (d: string) => tail.feed(d));
  let exitInfo: ServerExit | null = null;
  const exited = new Promise<ServerExit>((resolve) => {
    child.on('error', (err) => {
      tail.note(`spawn: ${err.message}`);
      exitInfo ??= { code: null, signal: null };
      resolve(exitInfo);
    });
    child.on('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
  });
  const proc: ServeProcess = {
    pid: child.pid ?? -1,
    url: '',
    exited,
    exit: () => exitInfo,
    stderrTail: () => tail.lines(),
    stop: async (graceMs) => {
      if (exitInfo) return { exit: exitInfo, clean: false };
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
      const first = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (first !== 'late') return { exit: first, clean: true };
      child.kill('SIGKILL');
      return { exit: await exited, clean: false };
    },
  };
  try {
    const deadline = Date.now() + (o.startTimeoutMs ?? 180_000);
    const url = await Promise.race([urlSeen, exited.then(() => null)]);
    if (url === null) throw new Error(`bmoe serve exited before listening: ${oneLine(proc.stderrTail())}`);
    proc.url = url;
    await waitHealthy(proc, deadline);
    return proc;
  } catch (err) {
    await proc.stop(5000);
    throw err;
  }
}

async function waitHealthy(proc: ServeProcess, deadline: number): Promise<void> {
  for (;;) {
    if (proc.exit()) throw new Error(`bmoe serve exited while loading: ${oneLine(proc.stderrTail())}`);
    try {
      const res = await fetch(`${proc.url}/health`, { signal: AbortSignal.timeout(5000) });
      await res.body?.cancel();
      if (res.status === 200) return;
    } catch {
      // not answering yet
    }
    if (Date.now() > deadline) throw new Error(`bmoe serve did not become healthy in time: ${oneLine(proc.stderrTail())}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
