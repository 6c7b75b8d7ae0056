// `bmoe native build | status`: the native addon on this machine. `build` compiles it from the
// pinned llama.cpp source for this CPU into the user's cache (for a platform without a prebuilt,
// e.g. a phone whose package did not install, where only the wasm32-wasi fallback would load);
// `status` says which binary loads, why the others did not, and whether experts can stream.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { LocalNativeBuild, NativeBuild } from '@bmoe/engine';
import type { CliContext } from '../context.js';
import { table } from '../format.js';

/** `bmoe native status --json`: the shape setup scripts read. */
export interface NativeStatus {
  /** What loaded (null: nothing did; then `error` says why). */
  loaded: { kind: NativeBuild['kind']; candidate: string; file: string; variant: string | null } | null;
  /** Experts can stream from flash (a native binary: O_DIRECT read lanes); false for wasm or nothing. */
  streaming: boolean;
  /** Reads overlap compute (patch 0002 is in the binary). */
  overlap: boolean;
  /** llama.cpp's commit and CPU features of the loaded binary ('' when nothing loaded). */
  llamaCommit: string;
  system: string;
  /** Candidates tried before the one that loaded, and why each did not. */
  failed: Array<{ candidate: string; reason: string }>;
  localBuild: LocalNativeBuild;
  error: string | null;
}

const KIND_WORDS: Record<NativeBuild['kind'], string> = {
  env: 'the file BMOE_NATIVE_PATH names',
  checkout: "this source checkout's build",
  prebuilt: 'a prebuilt platform package',
  local: 'the local build (bmoe native build)',
  wasm: 'the wasm32-wasi fallback',
};

/** What `bmoe native status` reports, gathered without throwing. */
export async function nativeStatus(): Promise<NativeStatus> {
  const { localNativeBuild, nativeBuild } = await import('@bmoe/engine');
  const localBuild = localNativeBuild();
  try {
    const b = await nativeBuild();
    const failed = b.failed.map((f) => {
      const i = f.indexOf(': ');
      return i < 0 ? { candidate: f, reason: '' } : { candidate: f.slice(0, i), reason: f.slice(i + 2) };
    });
    return {
      loaded: { kind: b.kind, candidate: b.candidate, file: b.file, variant: b.kind === 'prebuilt' ? b.variant : null },
      streaming: !b.wasm,
      overlap: !b.wasm && b.overlapSupported,
      llamaCommit: b.llamaCommit,
      system: b.system,
      failed,
      localBuild,
      error: null,
    };
  } catch (e) {
    return { loaded: null, streaming: false, overlap: false, llamaCommit: '', system: '', failed: [], localBuild, error: e instanceof Error ? e.message : String(e) };
  }
}

/** The human lines of a status. */
export function formatNativeStatus(s: NativeStatus): string {
  const rows: Array<[string, string]> = [];
  if (s.loaded) {
    const variant = s.loaded.variant ? ` (CPU variant ${s.loaded.variant})` : '';
    rows.push(['loaded', `${KIND_WORDS[s.loaded.kind]}${variant}: ${s.loaded.file}`]);
    rows.push(['experts', s.streaming ? `stream from flash (O_DIRECT read lanes${s.overlap ? ', reads overlapped with compute' : ''})` : 'cannot stream: resident models only, one thread (run `bmoe native build`)']);
    rows.push(['llama.cpp', `${s.llamaCommit.slice(0, 8)}; ${s.system.replace(/\s*\|\s*$/, '')}`]);
  } else {
    rows.push(['loaded', `nothing: ${s.error ?? 'no binary loads'}`]);
  }
  rows.push(['local build', `${s.localBuild.file} (${s.localBuild.present ? 'built' : 'not built'})`]);
  for (const f of s.failed) rows.push(['not loaded', `${f.candidate}: ${f.reason}`]);
  return table(rows);
}

export function registerNative(program: Command, ctx: CliContext): void {
  const native = program.command('native').description('the native addon on this machine: build it for this CPU, or see which binary loads');
  native
    .command('status')
    .description('which binary loads (checkout build, prebuilt package, local build, or wasm), why the others did not, and whether experts can stream')
    .option('--json', 'print the status as JSON')
    .action(async (flags: { json?: boolean }) => {
      const s = await nativeStatus();
      process.stdout.write(flags.json ? `${JSON.stringify(s, null, 2)}\n` : formatNativeStatus(s));
      ctx.exitCode = s.loaded ? 0 : 1;
    });
  native
    .command('build')
    .description("build the native addon for this machine's CPU from the pinned llama.cpp source (npm), into ~/.cache/bmoe/native/<version>/; needs cmake, ninja, a C++ compiler, git")
    .addOption(new Option('--jobs <n>', 'parallel compile jobs (default: the cores)').argParser((v) => {
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1) throw new InvalidArgumentError('a whole number ≥ 1');
      return n;
    }))
    .option('--check', 'look for the tools and say what would be built; build nothing')
    .action(async (flags: { jobs?: number; check?: boolean }) => {
      const { buildNative } = await import('@bmoe/engine');
      ctx.exitCode = await buildNative({ jobs: flags.jobs, check: flags.check });
    });
}
