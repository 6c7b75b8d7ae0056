// `bmoe make-model --preset NAME --out FILE`: a synthetic GGUF that llama.cpp loads and runs,
// written streaming (files larger than RAM are fine), deterministic for the same arguments.
// `--mmproj FILE` also writes the preset's multimodal projector (llama.cpp's mmproj) beside it.
import type { Command } from 'commander';
import { EXIT_INTERRUPTED, usageError, type CliContext } from '../context.js';
import { formatBytes, table } from '../format.js';
import type { MadeModel } from '../make.js';
import { nonNegativeNumber, positiveInt, uint32 } from '../parse.js';

interface MakeFlags {
  preset?: string;
  out?: string;
  layers?: number;
  quant?: string;
  seed?: number;
  routerSkew?: number;
  /** llama-gguf-split's syntax (300M, 2G; M = 10^6 bytes, G = 10^9), or plain bytes; parsed in the action (@bmoe/gguf loads lazily). */
  splitMaxSize?: string;
  /** Also write the preset's projector (mmproj GGUF) here, with the same seed. */
  mmproj?: string;
  list?: boolean;
}

export function registerMakeModel(program: Command, ctx: CliContext): void {
  program
    .command('make-model')
    .description('write a synthetic MoE GGUF (real shapes, quantization, tokenizer and chat template; random weights)')
    .option('--preset <name>', 'model preset (see --list)')
    .option('--out <file>', 'output GGUF path')
    .option('--layers <N>', "number of layers (every other dimension keeps the preset's)", positiveInt)
    .option('--quant <type>', "quantization mix (default: the preset's)")
    .option('--seed <S>', "weight seed (default: the generator's, 1)", uint32)
    .option('--router-skew <X>', 'plant an expert popularity skew in the routers; 0 = uniform', nonNegativeNumber)
    .option('--split-max-size <N>', "write shards of at most N tensor bytes each, as llama-gguf-split does (N with M or G: 300M, 2G; or bytes): --out m.gguf writes m-00001-of-0000K.gguf ...")
    .option('--mmproj <file>', "also write the preset's multimodal projector (mmproj GGUF for llama.cpp's mtmd: qwen35moe and gemma4 presets), same seed")
    .option('--list', 'list the presets with their source and size')
    .action(async function (this: Command, flags: MakeFlags) {
      if (flags.list) {
        process.stdout.write(await formatPresets());
        ctx.exitCode = 0;
        return;
      }
      if (!flags.preset || !flags.out) {
        usageError(this, `make-model needs --preset and --out (or --list)`);
      }
      const { listPresets, parseSplitSize } = await import('@bmoe/gguf');
      if (flags.preset.startsWith('tiny-') && !listPresets().some((p) => p.name === flags.preset)) {
        // Any other MoE architecture of the pinned llama.cpp, from its own fixture writer.
        for (const [flag, v] of [['--layers', flags.layers], ['--quant', flags.quant], ['--seed', flags.seed], ['--router-skew', flags.routerSkew], ['--split-max-size', flags.splitMaxSize], ['--mmproj', flags.mmproj]] as const) {
          if (v !== undefined) usageError(this, `${flag} does not apply to ${flags.preset} (llama.cpp's fixture of that architecture)`);
        }
        const { makeArchFixture } = await import('../arch-fixture.js');
        const made = await makeArchFixture(flags.preset.slice('tiny-'.length), flags.out);
        process.stdout.write(table([
          ['path', made.path],
          ['size', `${formatBytes(made.bytes)} (${made.bytes} bytes)`],
          ['sha256', made.sha256],
        ]));
        ctx.exitCode = 0;
        return;
      }
      const mmprojProblem = await checkMmproj(flags);
      if (mmprojProblem) usageError(this, mmprojProblem);
      let splitMaxBytes: number | undefined;
      try {
        splitMaxBytes = flags.splitMaxSize === undefined ? undefined : parseSplitSize(flags.splitMaxSize);
      } catch (err) {
        usageError(this, `option '--split-max-size <N>' argument '${flags.splitMaxSize}' is invalid. ${(err as Error).message}`);
      }
      const { makeWithProgress } = await import('../make.js');
      const ac = new AbortController();
      const onSigint = (): void => ac.abort();
      process.once('SIGINT', onSigint);
      try {
        const made = await makeWithProgress(
          {
            preset: flags.preset,
            out: flags.out,
            layers: flags.layers,
            quant: flags.quant,
            seed: flags.seed,
            routerSkew: flags.routerSkew,
            splitMaxBytes,
            signal: ac.signal,
          },
          `writing ${flags.out}`,
        );
        process.stdout.write(table([...madeRows(made), ...(await writeProjector(flags, ac.signal))]));
        ctx.exitCode = 0;
      } catch (err) {
        if (ac.signal.aborted) {
          process.stderr.write('bmoe: interrupted, no file written\n');
          ctx.exitCode = EXIT_INTERRUPTED;
          return;
        }
        throw err;
      } finally {
        process.off('SIGINT', onSigint);
      }
    });
}

/** What make-model prints: the model's path (its first shard when split), size and hash, then every shard. */
function madeRows(made: MadeModel): Array<[string, string]> {
  const rows: Array<[string, string]> = [
    ['path', made.path],
    ['size', `${formatBytes(made.bytes)} (${made.bytes} bytes)`],
    ['sha256', made.shards.length > 1 ? `${made.sha256} (the shards concatenated)` : made.sha256],
  ];
  if (made.shards.length > 1) {
    made.shards.forEach((s, i) => rows.push([`shard ${i + 1}/${made.shards.length}`, `${s.path} (${formatBytes(s.bytes)}, sha256 ${s.sha256})`]));
  }
  return rows;
}

/**
 * Why --mmproj cannot be honoured, or undefined. An unknown preset is left to makeModel's error,
 * as without --mmproj.
 */
async function checkMmproj(flags: MakeFlags): Promise<string | undefined> {
  if (flags.mmproj === undefined) return undefined;
  if (flags.mmproj === flags.out) return '--mmproj must be another file than --out';
  const { listPresets, presetsWithProjector, projectorKindOf } = await import('@bmoe/gguf');
  const preset = listPresets().find((p) => p.name === flags.preset);
  if (preset && projectorKindOf(preset) === undefined) {
    return `--mmproj: preset ${preset.name} (${preset.shape.arch}) has no projector; presets with one: ${presetsWithProjector().join(', ')}`;
  }
  return undefined;
}

/** With --mmproj: write the preset's projector (the model's seed); its path, size and hash. */
async function writeProjector(flags: MakeFlags, signal: AbortSignal): Promise<Array<[string, string]>> {
  if (flags.mmproj === undefined || flags.preset === undefined) return [];
  const { makeProjector } = await import('@bmoe/gguf');
  const made = await makeProjector({ preset: flags.preset, seed: flags.seed, out: flags.mmproj, signal });
  return [
    ['mmproj', made.path],
    ['mmproj size', `${formatBytes(made.bytes)} (${made.bytes} bytes)`],
    ['mmproj sha256', made.sha256],
  ];
}

/** One line per preset: name, architecture, file size at its own layer count, where the shape came from. */
async function formatPresets(): Promise<string> {
  const { listPresets, planModel } = await import('@bmoe/gguf');
  return table([
    ...listPresets().map((p): [string, string] => {
      const bytes = planModel({ preset: p.name }).layout.fileSize;
      return [p.name, `${p.shape.arch}, ${p.shape.nLayer} layers, ${formatBytes(bytes)}; ${p.source}`];
    }),
    ['tiny-<arch>', "any other MoE architecture of the pinned llama.cpp (its names: tiny-olmoe, tiny-deepseek4, ...): llama.cpp's own fixture (tests/test-llama-archs.cpp), 2 layers, F32, with a 128-token vocabulary; see docs/architectures.md"],
  ]);
}
