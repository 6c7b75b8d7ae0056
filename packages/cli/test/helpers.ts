// Spawns the built CLI and collects its output, with a hard timeout so a hang fails the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadModel, type LoadOptions, type Model } from '@bmoe/engine';

export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface RunCliOptions {
  /** Kill (SIGKILL) after this long. Default 30 s. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Called on every stdout chunk, with the child (e.g. to send it SIGINT). */
  onStdout?: (chunk: string, child: ChildProcess) => void;
  /** Written to the child's stdin (a pipe), then closed. Default: no stdin. */
  input?: string;
}

export function runCli(args: readonly string[], opts: RunCliOptions = {}): Promise<CliResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, BMOE_DEBUG: '', ...opts.env },
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      opts.onStdout?.(d, child);
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** The non-empty lines of a text. */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}

/**
 * Tokens and every token's logits of a greedy run through the engine, the identity tests'
 * reference (2 threads, a 256-token context). `onModel` may look at the loaded model first.
 */
export async function greedyLogits(
  path: string,
  load: LoadOptions,
  prompt: string,
  maxTokens: number,
  onModel?: (model: Model) => void,
): Promise<{ tokens: number[]; logits: Buffer[] }> {
  const model = await loadModel(path, { threads: 2, contextSize: 256, ...load });
  try {
    onModel?.(model);
    const gen = model.createSession().generate(prompt, { maxTokens, temperature: 0, logits: true });
    const logits: Buffer[] = [];
    for await (const ev of gen) logits.push(Buffer.from(ev.logits!.buffer, ev.logits!.byteOffset, ev.logits!.byteLength));
    return { tokens: (await gen.result).tokens, logits };
  } finally {
    await model.close();
  }
}
