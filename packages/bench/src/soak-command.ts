// `bmoe-bench soak` / `bmoe bench soak`: the flags, the default model (the tiny qwen3moe fixture,
// made once with `bmoe make-model`), the report on stdout and exit 1 when the soak failed.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { runInCgroup } from './cgroup.js';
import { engineFlag, threadsFlag } from './flags.js';
import { modelCacheDir } from './runner.js';
import { DEFAULT_SOAK, runSoak, soakReport } from './soak.js';

const DEFAULT_PRESET = 'tiny-qwen3moe';

const integer = (what: string, min: number, max: number) => (v: string): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${what} must be an integer from ${min} to ${max}, got ${v}`);
  return n;
};

interface SoakFlags {
  model?: string;
  seconds: number;
  clients: number;
  maxRssGrowthMb: number;
  seed?: number;
  threads: number;
  moeStream?: boolean;
  cacheMb?: number | 'auto';
  maxQueue?: number;
  json?: boolean;
}

/** The soak's default model: the tiny fixture, made once under the bench's model cache. */
async function defaultModel(bmoe: string[], log: (l: string) => void): Promise<string> {
  const path = join(modelCacheDir(), `soak-${DEFAULT_PRESET}.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(modelCacheDir(), { recursive: true });
  log(`making the soak's default model ${path} (${DEFAULT_PRESET}) …`);
  const r = await runInCgroup([...bmoe, 'make-model', '--preset', DEFAULT_PRESET, '--out', path], null, 600_000);
  if (r.code !== 0) throw new Error(`make-model failed: ${r.stderr.trim().split('\n').pop() ?? ''}`);
  return path;
}

export function registerSoak(program: Command, bmoe: () => string[]): void {
  program
    .command('soak')
    .description('bmoe serve under K clients for a bounded time: valid, abandoned, oversized, malformed and hostile structured-output requests; fails on a crash, an unexpected answer, /health failing or RSS growth')
    .option('--model <file>', `GGUF to serve (default: the ${DEFAULT_PRESET} fixture, made once)`)
    .option('--seconds <S>', 'how long the clients keep sending', integer('--seconds', 1, 86_400), DEFAULT_SOAK.seconds)
    .option('--clients <K>', 'concurrent clients', integer('--clients', 1, 256), DEFAULT_SOAK.clients)
    .option('--max-rss-growth-mb <N>', "largest allowed growth of the server's RSS from start (after a warm-up) to end", integer('--max-rss-growth-mb', 0, 1 << 20), DEFAULT_SOAK.maxRssGrowthMb)
    .option('--seed <N>', 'seed of the request mix (default: random, reported)', integer('--seed', 0, 2 ** 31 - 1))
    .addOption(threadsFlag(2, 'compute threads of the server'))
    .option('--moe-stream', 'stream experts in the server')
    .addOption(engineFlag('stream.cacheMb', { help: 'expert cache of the server, MiB (with --moe-stream)', default: null }))
    .option('--max-queue <N>', "the server's --max-queue (default: the server's)", integer('--max-queue', 0, 1_000_000))
    .option('--json', 'print the report as JSON')
    .action(async (f: SoakFlags) => {
      if (f.cacheMb !== undefined && !f.moeStream) throw new InvalidArgumentError('--cache-mb requires --moe-stream');
      if (f.model !== undefined && !existsSync(f.model)) throw new Error(`--model ${f.model}: no such file`);
      const log = (l: string): void => void process.stderr.write(`${l}\n`);
      const cmd = bmoe();
      const serveFlags = [
        '-t', String(f.threads),
        ...(f.moeStream ? ['--moe-stream'] : []),
        ...(f.cacheMb !== undefined ? ['--cache-mb', String(f.cacheMb)] : []),
        ...(f.maxQueue !== undefined ? ['--max-queue', String(f.maxQueue)] : []),
      ];
      const r = await runSoak({
        bmoe: cmd,
        model: f.model ?? (await defaultModel(cmd, log)),
        seconds: f.seconds,
        clients: f.clients,
        maxRssGrowthMb: f.maxRssGrowthMb,
        seed: f.seed,
        serveFlags,
        log,
      });
      process.stdout.write(`${f.json ? JSON.stringify(r, null, 2) : soakReport(r)}\n`);
      if (!r.ok) process.exitCode = 1;
    });
}
