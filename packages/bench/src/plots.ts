// The summary's plots: Vega-Lite specs (pure data → spec, tested), rendered headless by Vega to
// SVG (no canvas, no browser) and by resvg to PNG. Four charts, as the bench issue asks: tok/s per
// config with p5–p95 whiskers; the per-token timeline (wall, compute, I/O); the cache-hit warm-up
// curve; flash read/token against hit rate.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { analyzeRow, rowLabel, type LoadedRow } from './analyze.js';

const WIDTH = 640;

/** tok/s (mean) per config with p5–p95 whiskers, one chart per model. */
export function throughputSpec(rows: LoadedRow[]): TopLevelSpec {
  const data = rows
    .map(analyzeRow)
    .filter((r) => r.status === 'ok' && r.mean !== null)
    .map((r) => ({ config: r.label, mean: r.mean, p5: r.p5 ?? r.mean, p95: r.p95 ?? r.mean }));
  const order = data.map((d) => d.config);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'tok/s per config (bar = mean, whisker = p5–p95)',
    width: WIDTH,
    height: { step: 22 },
    data: { values: data },
    layer: [
      { mark: { type: 'bar', color: '#4c78a8' }, encoding: { y: { field: 'config', type: 'nominal', sort: order, title: null, axis: { labelLimit: 360 } }, x: { field: 'mean', type: 'quantitative', title: 'tokens / s' } } },
      { mark: { type: 'rule', color: '#222' }, encoding: { y: { field: 'config', type: 'nominal', sort: order }, x: { field: 'p5', type: 'quantitative' }, x2: { field: 'p95' } } },
      { mark: { type: 'text', align: 'left', dx: 4, fontSize: 10 }, encoding: { y: { field: 'config', type: 'nominal', sort: order }, x: { field: 'p95', type: 'quantitative' }, text: { field: 'mean', type: 'quantitative', format: '.2f' } } },
    ],
  };
}

/** Per-token wall / compute / I/O in ms, one small panel per streaming config. */
export function timelineSpec(rows: LoadedRow[]): TopLevelSpec {
  const values: Array<{ config: string; token: number; series: string; ms: number }> = [];
  for (const r of rows) {
    if (r.tokens.length < 2) continue;
    for (const t of r.tokens.slice(1)) {
      values.push({ config: rowLabel(r.record), token: t.tokenIndex, series: 'wall', ms: t.wallMs });
      values.push({ config: rowLabel(r.record), token: t.tokenIndex, series: 'compute', ms: t.computeMs });
      values.push({ config: rowLabel(r.record), token: t.tokenIndex, series: 'I/O', ms: t.ioMs });
    }
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'per-token timeline (ms): wall, compute, flash I/O',
    data: { values },
    facet: { row: { field: 'config', type: 'nominal', title: null, header: { labelAngle: 0, labelOrient: 'top', labelAnchor: 'start', labelFontSize: 11, labelLimit: 600 }, sort: rows.map((r) => rowLabel(r.record)) } },
    spec: {
      width: WIDTH,
      height: 70,
      mark: { type: 'line', strokeWidth: 1 },
      encoding: {
        x: { field: 'token', type: 'quantitative', title: 'token' },
        y: { field: 'ms', type: 'quantitative', title: 'ms' },
        color: { field: 'series', type: 'nominal', scale: { domain: ['wall', 'compute', 'I/O'], range: ['#222', '#4c78a8', '#f58518'] }, title: null },
      },
    },
    // each panel its own ms scale: the mmap row is 20× slower than the cached rows
    resolve: { scale: { y: 'independent' } },
  };
}

/** Cumulative cache hit rate by token: how the cache warms up. */
export function warmupSpec(rows: LoadedRow[]): TopLevelSpec {
  const values: Array<{ config: string; token: number; hit: number }> = [];
  for (const r of rows) {
    let hits = 0;
    let all = 0;
    const curve: typeof values = [];
    for (const t of r.tokens.slice(1)) {
      hits += t.expertHits;
      all += t.expertHits + t.expertMisses;
      if (all > 0) curve.push({ config: rowLabel(r.record), token: t.tokenIndex, hit: (100 * hits) / all });
    }
    // a row that never hit (cache 0) is a flat line at 0: it says nothing about warm-up
    if (hits > 0) values.push(...curve);
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'cache warm-up: cumulative hit rate (%)',
    width: WIDTH,
    height: 240,
    data: { values },
    mark: { type: 'line' },
    encoding: {
      x: { field: 'token', type: 'quantitative', title: 'token' },
      y: { field: 'hit', type: 'quantitative', title: 'hit rate so far (%)', scale: { domain: [0, 100] } },
      color: { field: 'config', type: 'nominal', title: null, legend: { orient: 'bottom', columns: 1, labelLimit: 600 } },
    },
  };
}

/** Flash MiB/token against hit rate: one point per streaming row. */
export function readVsHitSpec(rows: LoadedRow[]): TopLevelSpec {
  const values = rows
    .map(analyzeRow)
    .filter((r) => r.status === 'ok' && r.mibPerToken !== null)
    .map((r) => ({ config: r.label, hit: r.hitPercent ?? 0, mib: r.mibPerToken, tps: r.mean }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'flash read per token vs cache hit rate',
    width: WIDTH,
    height: 260,
    data: { values },
    layer: [
      {
        mark: { type: 'point', filled: true, size: 80 },
        encoding: {
          x: { field: 'hit', type: 'quantitative', title: 'cache hit (%)', scale: { domain: [0, 100] } },
          y: { field: 'mib', type: 'quantitative', title: 'flash read (MiB / token)', scale: { zero: true } },
          color: { field: 'tps', type: 'quantitative', title: 'tok/s' },
        },
      },
      {
        mark: { type: 'text', align: 'left', dx: 7, dy: -6, fontSize: 9 },
        encoding: { x: { field: 'hit', type: 'quantitative' }, y: { field: 'mib', type: 'quantitative' }, text: { field: 'config' } },
      },
    ],
  };
}

/** Vega-Lite → SVG string, headless. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  view.background('white');
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}

/** SVG → PNG at 2× for sharp text (system fonts; DejaVu Sans where present). */
export function renderPng(svg: string): Buffer {
  const r = new Resvg(svg, { fitTo: { mode: 'zoom', value: 2 }, font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' }, background: 'white' });
  return r.render().asPng();
}

const slug = (s: string): string => s.replace(/[^a-z0-9._-]+/gi, '-');

/** Writes the four plots per model into `dir/plots/` (SVG + PNG); returns them for the summary. */
export async function writePlots(dir: string, loaded: LoadedRow[], mkdir: (p: string) => void): Promise<Record<string, Array<{ title: string; file: string }>>> {
  const out: Record<string, Array<{ title: string; file: string }>> = {};
  mkdir(join(dir, 'plots'));
  const models = [...new Set(loaded.map((r) => r.record.model.name))];
  for (const model of models) {
    const rows = loaded.filter((r) => r.record.model.name === model);
    const charts: Array<[string, string, TopLevelSpec]> = [
      ['tok/s per config', 'throughput', throughputSpec(rows)],
      ['per-token timeline', 'timeline', timelineSpec(rows.filter((r) => r.tokens.length > 1))],
      ['cache warm-up', 'warmup', warmupSpec(rows)],
      ['flash read/token vs hit rate', 'read-vs-hit', readVsHitSpec(rows)],
    ];
    out[model] = [];
    for (const [title, name, spec] of charts) {
      const base = `plots/${slug(model)}.${name}`;
      const svg = await renderSvg(spec);
      writeFileSync(join(dir, `${base}.svg`), svg);
      writeFileSync(join(dir, `${base}.png`), renderPng(svg));
      out[model].push({ title: `${model}: ${title}`, file: `${base}.svg` });
    }
  }
  return out;
}
