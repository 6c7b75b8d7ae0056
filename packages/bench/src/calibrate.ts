// `bmoe-bench calibrate`: find the router skew X (`make-model --router-skew X`) at which a
// synthetic Qwen3-30B-A3B-shaped model hits the expert cache as often as the real one did on the
// phone: 53 % at a 2000 MiB cache and 76 % at 4000 MiB, out of ~16 GB of experts. Cache sizes are
// the same share of expert bytes (configs.ts), so a model with fewer layers calibrates the same
// routing. Each X is a real model and real `bmoe run --moe-stream` generations; the search is a
// grid, then refinement between the best point and its neighbours.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inspectModel } from '@bmoe/engine';
import { runInCgroup } from './cgroup.js';
import { resolveFlags, specCachePercent } from './configs.js';
import { parseDoneEvent } from './run-output.js';

/** The spec's published Qwen3-30B-A3B hit rates (cache MiB → hit %). */
export const SPEC_HIT_POINTS: ReadonlyArray<{ cacheMiB: number; hitPercent: number }> = [
  { cacheMiB: 2000, hitPercent: 53 },
  { cacheMiB: 4000, hitPercent: 76 },
];

export interface CalibrateOptions {
  /** Preset of the calibration model. Default qwen3-30b-a3b. */
  preset: string;
  /** Layers of the calibration model (routing statistics are per layer). Default 4. */
  layers: number;
  /** Tokens per generation (the spec's 256: the hit rate includes the warm-up, as on the phone). */
  n: number;
  threads: number;
  prompt: string;
  /** Where the calibration models are written (deleted after use unless keepModels). */
  workDir: string;
  keepModels: boolean;
  /** Skews of the first pass. */
  grid: number[];
  /** Refinement rounds after the grid. Default 2. */
  refine: number;
  bmoe: string[];
  log: (line: string) => void;
}

export interface CalibrationPoint {
  skew: number;
  /** Measured hit % at each SPEC_HIT_POINTS cache share, in order. */
  hitPercent: number[];
  /** Root-mean-square distance to the spec's hit rates, percentage points. */
  rmse: number;
}

export interface CalibrationResult {
  best: CalibrationPoint;
  points: CalibrationPoint[];
  cachePercents: number[];
  model: { preset: string; layers: number; expertBytes: number };
}

/** RMS distance (percentage points) between measured and the spec's hit rates. Pure. */
export function hitError(measured: readonly number[]): number {
  const d = SPEC_HIT_POINTS.map((p, i) => (measured[i] ?? 0) - p.hitPercent);
  return Math.sqrt(d.reduce((a, x) => a + x * x, 0) / d.length);
}

/** Next skews to try: midpoints between the best point and its nearest measured neighbours. Pure. */
export function refineCandidates(points: readonly CalibrationPoint[]): number[] {
  const sorted = [...points].sort((a, b) => a.skew - b.skew);
  const best = sorted.reduce((b, p) => (p.rmse < b.rmse ? p : b), sorted[0] as CalibrationPoint);
  const i = sorted.indexOf(best);
  const out: number[] = [];
  const lo = sorted[i - 1];
  const hi = sorted[i + 1];
  if (lo) out.push(Math.round(((lo.skew + best.skew) / 2) * 1000) / 1000);
  if (hi) out.push(Math.round(((hi.skew + best.skew) / 2) * 1000) / 1000);
  return out.filter((x) => !points.some((p) => Math.abs(p.skew - x) < 1e-6));
}

async function bmoe(o: CalibrateOptions, args: string[]): Promise<string> {
  const r = await runInCgroup([...o.bmoe, ...args], null, 3600_000);
  if (r.code !== 0) throw new Error(`bmoe ${args.slice(0, 2).join(' ')} failed (exit ${r.code ?? r.signal}): ${r.stderr.trim().split('\n').pop() ?? ''}`);
  return r.stdout;
}

async function measure(o: CalibrateOptions, skew: number, cachePercents: number[]): Promise<{ point: CalibrationPoint; expertBytes: number }> {
  mkdirSync(o.workDir, { recursive: true });
  const model = join(o.workDir, `calib-${o.preset}-${o.layers}l-skew${skew}.gguf`);
  if (!existsSync(model)) {
    await bmoe(o, ['make-model', '--preset', o.preset, '--layers', String(o.layers), '--router-skew', String(skew), '--out', model]);
  }
  const header = await inspectModel(model);
  const hits: number[] = [];
  for (const pct of cachePercents) {
    const cache = resolveFlags(`--moe-stream --cache-mb ${pct}%`, header.expertBytes, 'calibrate');
    const out = await bmoe(o, ['run', model, '-p', o.prompt, '-n', String(o.n), '-t', String(o.threads), '--json', ...cache]);
    const hit = parseDoneEvent(out)?.summary.hitPercent ?? null;
    if (hit === null) throw new Error(`no hit rate from bmoe run on ${model}`);
    hits.push(hit);
  }
  if (!o.keepModels) rmSync(model, { force: true });
  const point = { skew, hitPercent: hits, rmse: hitError(hits) };
  o.log(`skew ${skew}: hit ${hits.map((h) => `${h.toFixed(1)} %`).join(' / ')} (spec ${SPEC_HIT_POINTS.map((p) => `${p.hitPercent} %`).join(' / ')}), rmse ${point.rmse.toFixed(2)} pt`);
  return { point, expertBytes: header.expertBytes };
}

export async function calibrate(o: CalibrateOptions): Promise<CalibrationResult> {
  const cachePercents = SPEC_HIT_POINTS.map((p) => specCachePercent(p.cacheMiB));
  o.log(`cache shares of expert bytes: ${cachePercents.map((p) => `${p} %`).join(', ')} (the spec's ${SPEC_HIT_POINTS.map((p) => `${p.cacheMiB} MiB`).join(', ')})`);
  const points: CalibrationPoint[] = [];
  let expertBytes = 0;
  for (const skew of o.grid) {
    const m = await measure(o, skew, cachePercents);
    points.push(m.point);
    expertBytes = m.expertBytes;
  }
  for (let round = 0; round < o.refine; round++) {
    for (const skew of refineCandidates(points)) points.push((await measure(o, skew, cachePercents)).point);
  }
  points.sort((a, b) => a.skew - b.skew);
  const best = points.reduce((b, p) => (p.rmse < b.rmse ? p : b), points[0] as CalibrationPoint);
  return { best, points, cachePercents, model: { preset: o.preset, layers: o.layers, expertBytes } };
}

export function calibrationReport(r: CalibrationResult, command: string): string {
  const head = `| router skew X | ${r.cachePercents.map((p, i) => `hit @ ${p} % (spec ${SPEC_HIT_POINTS[i]?.cacheMiB} MiB: ${SPEC_HIT_POINTS[i]?.hitPercent} %)`).join(' | ')} | RMS error (pt) |`;
  const out = [
    '# bmoe-bench calibrate',
    '',
    `Model: ${r.model.preset}, ${r.model.layers} layers (${(r.model.expertBytes / 2 ** 20).toFixed(0)} MiB of experts), ` +
      'cache sizes as the same share of expert bytes as on the phone.',
    '',
    '```sh',
    command,
    '```',
    '',
    head,
    `|---|${r.cachePercents.map(() => '---|').join('')}---|`,
    ...r.points.map((p) => `| ${p.skew}${p === r.best ? ' **(best)**' : ''} | ${p.hitPercent.map((h) => `${h.toFixed(1)} %`).join(' | ')} | ${p.rmse.toFixed(2)} |`),
    '',
    `Best: X = ${r.best.skew} (RMS ${r.best.rmse.toFixed(2)} percentage points from the spec's points).`,
  ];
  return `${out.join('\n')}\n`;
}
