// `bmoe-bench image`: the time to evaluate a prompt holding an image — the projector's encoder,
// then the image's embeddings through every layer, routed experts included — resident against
// streamed (cache 0 and a partial cache, in a memory cgroup), on a real-shape text preset with a
// generated projector (the text model's width; the vision tower scaled down, as in the fixtures)
// and a generated photo-sized image. Each row is `bmoe run --image … -n 1 --json`, its own process;
// rows are interleaved over rounds and each reports its median.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inspectModel } from '@bmoe/engine';
import { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, type MemoryCgroup } from './cgroup.js';
import { parseDoneEvent } from './run-output.js';
import { median } from './waiting.js';

export { median };

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface ImageBenchOptions {
  bmoe: string[];
  preset: string;
  layers: number;
  /** The image's size in pixels. */
  width: number;
  height: number;
  threads: number;
  rounds: number;
  /** The streamed rows' memory cgroup, GiB. */
  memLimitGiB: number;
  /** The partial cache as a share of the expert bytes, percent. */
  cachePercent: number;
  prompt: string;
  workDir: string;
  dropCaches: boolean;
  log: (line: string) => void;
}

export interface ImageRow {
  name: string;
  args: string[];
  limited: boolean;
  /** Prompt tokens (image cells included) and the prompt's evaluation time of each round, ms. */
  promptTokens: number;
  promptMs: number[];
  /** Peak memory charged to the cgroup (limited rows), bytes. */
  peakBytes: number | null;
  error?: string;
}

async function bmoe(o: ImageBenchOptions, args: string[]): Promise<void> {
  const r = await runInCgroup([...o.bmoe, ...args], null, 3_600_000);
  if (r.code !== 0) throw new Error(`bmoe ${args[0]} failed: ${r.stderr.trim().split('\n').pop() ?? ''}`);
}

/** The model, its projector and the image, made once in the work folder. */
async function fixtures(o: ImageBenchOptions): Promise<{ model: string; image: string }> {
  mkdirSync(o.workDir, { recursive: true });
  const dir = join(o.workDir, `${o.preset}-${o.layers}l`);
  const model = join(dir, 'model.gguf');
  const mmproj = join(dir, 'mmproj-F16.gguf');
  if (!existsSync(model) || !existsSync(mmproj)) {
    o.log(`making ${o.preset} (${o.layers} layers) and its projector in ${dir}`);
    await bmoe(o, ['make-model', '--preset', o.preset, '--layers', String(o.layers), '--out', model, '--mmproj', mmproj]);
  }
  const image = join(o.workDir, `photo-${o.width}x${o.height}.jpg`);
  if (!existsSync(image)) await bmoe(o, ['make-image', '--out', image, '--width', String(o.width), '--height', String(o.height)]);
  return { model, image };
}

export async function runImageBench(o: ImageBenchOptions): Promise<{ rows: ImageRow[]; model: string; image: string; expertBytes: number }> {
  const { model, image } = await fixtures(o);
  const header = await inspectModel(model);
  const partialMb = Math.max(1, Math.round((header.expertBytes * o.cachePercent) / 100 / MiB));
  const streamed = ['--moe-stream', '--no-overlap', '--no-route-ahead'];
  const rows: ImageRow[] = [
    { name: 'resident', args: ['--no-moe-stream'], limited: false, promptTokens: 0, promptMs: [], peakBytes: null },
    { name: `streamed, cache 0, ${o.memLimitGiB} GiB cgroup`, args: [...streamed, '--cache-mb', '0'], limited: true, promptTokens: 0, promptMs: [], peakBytes: null },
    { name: `streamed, cache ${partialMb} MiB (${o.cachePercent} % of experts), ${o.memLimitGiB} GiB cgroup`, args: [...streamed, '--cache-mb', String(partialMb)], limited: true, promptTokens: 0, promptMs: [], peakBytes: null },
  ];
  let cg: MemoryCgroup | null = null;
  try {
    cg = createMemoryCgroup(o.memLimitGiB * GiB);
    for (let round = 1; round <= o.rounds; round++) {
      for (const row of rows) {
        if (row.error) continue;
        if (o.dropCaches) dropCaches();
        const argv = [...o.bmoe, 'run', model, '--image', image, '-p', o.prompt, '-n', '1', '-t', String(o.threads), '--temp', '0', '--json', ...row.args];
        const r = await runInCgroup(argv, row.limited ? cg : null, 3_600_000);
        const done = r.code === 0 ? parseDoneEvent(r.stdout) : null;
        if (!done) {
          row.error = r.oomKilled ? 'killed by the OOM killer' : `exit ${r.code ?? r.signal}: ${r.stderr.trim().split('\n').pop() ?? ''}`;
          o.log(`round ${round} ${row.name}: ${row.error}`);
          continue;
        }
        row.promptTokens = done.summary.promptTokens;
        row.promptMs.push(done.summary.promptMs);
        if (row.limited && r.peakBytes !== null) row.peakBytes = Math.max(row.peakBytes ?? 0, r.peakBytes);
        o.log(`round ${round} ${row.name}: ${done.summary.promptTokens} prompt tokens in ${(done.summary.promptMs / 1000).toFixed(3)} s`);
      }
    }
  } finally {
    if (cg) removeCgroup(cg);
  }
  return { rows, model, image, expertBytes: header.expertBytes };
}

/** The rows as markdown: median prompt time, its ratio to the resident row's, the rounds. */
export function imageBenchReport(r: Awaited<ReturnType<typeof runImageBench>>, o: Pick<ImageBenchOptions, 'preset' | 'layers' | 'width' | 'height' | 'rounds' | 'threads'>): string {
  const resident = median(r.rows[0]?.promptMs ?? []);
  const lines = [
    `Image prompt evaluation: ${o.preset} with ${o.layers} layers (experts ${(r.expertBytes / GiB).toFixed(2)} GiB) and a generated projector, a ${o.width}×${o.height} JPEG, ${o.threads} threads, median of ${o.rounds} interleaved rounds.`,
    '',
    '| row | prompt tokens | prompt time (s) | × resident | rounds (s) | peak cgroup MiB |',
    '|---|---:|---:|---:|---|---:|',
  ];
  for (const row of r.rows) {
    const m = median(row.promptMs);
    const rounds = row.promptMs.map((x) => (x / 1000).toFixed(3)).join(', ');
    lines.push(
      row.error && row.promptMs.length === 0
        ? `| ${row.name} | | | | ${row.error} | |`
        : `| ${row.name} | ${row.promptTokens} | ${(m / 1000).toFixed(3)} | ${(m / resident).toFixed(2)} | ${rounds} | ${row.peakBytes === null ? '' : (row.peakBytes / MiB).toFixed(0)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
