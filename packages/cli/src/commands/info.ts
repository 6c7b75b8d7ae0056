// `bmoe info MODEL`: the GGUF header only (no native addon): shape, quant types, the dense/expert
// split, one expert's slice per projection, and one token's routed working set; for a split model
// (given by its first shard) every shard, validated, and the totals of the whole model.
import type { Command } from 'commander';
import type { ModelHeaderInfo } from '@bmoe/engine';
import type { CliContext } from '../context.js';
import { formatBytes, formatMiB, percent, table } from '../format.js';
import { tableOption } from '../model-options.js';

export function registerInfo(program: Command, ctx: CliContext): void {
  program
    .command('info')
    .description('describe a GGUF model from its header: experts, quant types, dense vs expert bytes, working set')
    .argument('<model>', 'GGUF model file (a split model: its first shard, <name>-00001-of-0000N.gguf)')
    .option('--json', 'print the same data as JSON')
    .addOption(tableOption('nExpertUsed', { help: 'also give the working set at this top-k' }))
    .action(async (model: string, flags: { json?: boolean; nExpertUsed?: number }) => {
      const { inspectModel } = await import('@bmoe/engine');
      const info = await inspectModel(model, { nExpertUsed: flags.nExpertUsed });
      process.stdout.write(flags.json ? `${JSON.stringify(info, null, 2)}\n` : formatInfo(info));
      ctx.exitCode = 0;
    });
}

/** The human table. Exported for tests (and for planned models that were never written). */
export function formatInfo(info: ModelHeaderInfo): string {
  const slices = Object.entries(info.expertSliceBytes)
    .map(([proj, bytes]) => `${proj} ${formatBytes(bytes ?? 0)}`)
    .join(', ');
  const n = info.shards.length;
  const rows: Array<[string, string]> = [
    ['file', n > 1 ? `${info.path} (split model: ${n} shards, ${formatBytes(info.fileBytes)} in all)` : `${info.path} (${formatBytes(info.fileBytes)})`],
    ...(n > 1 ? info.shards.map((s, i): [string, string] => [`shard ${i + 1}/${n}`, `${s.path} (${formatBytes(s.bytes)})`]) : []),
    ['architecture', info.architecture],
    ['name', info.name ?? '-'],
    ['layers', String(info.layers)],
    ['experts', String(info.experts)],
    ['experts used', `${info.expertsUsedDefault} (top-k)`],
    ['quant types', info.quantTypes.map((q) => `${q.type} ${formatBytes(q.bytes)}`).join(', ')],
    ['dense weights', `${formatBytes(info.denseBytes)} (${percent(info.denseBytes, info.totalBytes)})`],
    ['expert weights', `${formatBytes(info.expertBytes)} (${percent(info.expertBytes, info.totalBytes)})`],
    ['expert slice', slices ? `${slices} (one expert, one layer)` : '-'],
    ['working set', `${formatMiB(info.workingSetBytesDefault)} per token at top-${info.expertsUsedDefault}`],
  ];
  if (info.expertsUsed !== info.expertsUsedDefault) {
    rows.push(['', `${formatMiB(info.workingSetBytes)} per token at top-${info.expertsUsed} (--n-expert-used)`]);
  }
  return table(rows);
}
