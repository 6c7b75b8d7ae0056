// `bmoe info MODEL`: the GGUF header only (no native addon): shape, quant types, the dense/expert
// split, one expert's slice per projection, and one token's routed working set; for a split model
// (given by its first shard) every shard, validated, and the totals of the whole model; and the
// image projector that run, chat and serve would load with it (--mmproj, the one pulled with it,
// or an mmproj*.gguf beside it), from its header too.
import type { Command } from 'commander';
import type { ModelHeaderInfo, ProjectorInfo } from '@bmoe/engine';
import type { CliContext } from '../context.js';
import { formatBytes, formatMiB, percent, table } from '../format.js';
import { tableOption } from '../model-options.js';

interface InfoFlags {
  json?: boolean;
  nExpertUsed?: number;
  mmproj?: string;
}

export function registerInfo(program: Command, ctx: CliContext): void {
  program
    .command('info')
    .description('describe a GGUF model from its header: experts, quant types, dense vs expert bytes, working set; and its image projector')
    .argument('<model>', 'GGUF model file (a split model: its first shard, <name>-00001-of-0000N.gguf)')
    .option('--json', 'print the same data as JSON')
    .addOption(tableOption('nExpertUsed', { help: 'also give the working set at this top-k' }))
    .addOption(tableOption('mmproj', { help: "describe this image projector (mmproj GGUF) with the model; 'none': no projector" }))
    .action(async (model: string, flags: InfoFlags) => {
      const { inspectModel } = await import('@bmoe/engine');
      const info = await inspectModel(model, { nExpertUsed: flags.nExpertUsed });
      const projector = await describedProjector(model, flags.mmproj);
      process.stdout.write(flags.json ? `${JSON.stringify({ ...info, projector }, null, 2)}\n` : formatInfo(info, projector));
      ctx.exitCode = 0;
    });
}

/** The projector loading `model` would take (as run does), its header read; null when none. */
async function describedProjector(model: string, given: string | undefined): Promise<ProjectorInfo | null> {
  const { projectorOption, projectorPath } = await import('../projector.js');
  const { readProjector } = await import('@bmoe/engine');
  const path = await projectorPath(model, await projectorOption(model, given));
  return path === null ? null : readProjector(path);
}

/** The projector's rows: where it is, what kind, what it takes and gives (its width beside the model's). */
function projectorRows(p: ProjectorInfo | null, embeddingLength: number): Array<[string, string]> {
  if (p === null) return [['projector', 'none (text only; --mmproj FILE names one)']];
  const px = (n: number | null): string => (n === null ? '?' : `${n} px`);
  // Only said: llama.cpp's check is on the tensors (a Qwen3-VL merger's output also carries its deepstack layers).
  const fits = p.projectionDim === embeddingLength ? "the model's embedding width" : `the model's embedding width is ${embeddingLength}`;
  return [
    ['projector', `${p.path} (${formatBytes(p.bytes)})`],
    ['projector type', `${p.projectorType}${p.blocks === null ? '' : `, ${p.blocks} encoder blocks`}`],
    ['image size', `${px(p.imageSize)}, patches of ${px(p.patchSize)}`],
    ['projection width', p.projectionDim === null ? '?' : `${p.projectionDim} (${fits})`],
  ];
}

/** The human table. Exported for tests (and for planned models that were never written: no projector row without one given). */
export function formatInfo(info: ModelHeaderInfo, projector?: ProjectorInfo | null): string {
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
  if (projector !== undefined) rows.push(...projectorRows(projector, info.embeddingLength));
  return table(rows);
}
