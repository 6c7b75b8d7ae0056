// `bmoe pull REF`: download a GGUF model (every shard of a split one) into the models folder,
// resumable and checked against its published SHA-256; prints the local path `bmoe run` loads.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { pullModel } from '../hub/index.js';

const HELP_AFTER = `
References:
  hf:owner/repo[:QUANT]          the repository's GGUF of that quant (Q4_K_M, q8_0, UD-Q4_K_XL, ...;
                                 case-insensitive; split models come whole); without QUANT: its only
                                 model, else Q4_K_M
  hf:owner/repo/path/file.gguf   one file of the repository (with all its shards if split)
  hf:owner/repo@REVISION...      a branch, tag or commit instead of main
  https://host/path/file.gguf    a plain URL (a first shard -00001-of-0000N brings the others)

The same references work in place of MODEL in bmoe run, chat, serve and bench (pulled first).

Environment:
  BMOE_MODELS_DIR  where models go (default ~/.cache/bmoe/models; in Termux ~/bmoe/models)
  HF_TOKEN         sent as a Bearer token to the hub, for gated and private repositories
  HF_ENDPOINT      the hub's address (default https://huggingface.co)`;

export function registerPull(program: Command, ctx: CliContext): void {
  program
    .command('pull')
    .description('download a GGUF model from Hugging Face or a URL into the models folder (resumable, SHA-256 checked); prints its path')
    .argument('<ref>', 'hf:owner/repo[:QUANT], hf:owner/repo/path/file.gguf or an https URL')
    .addHelpText('after', HELP_AFTER)
    .action(async (ref: string) => {
      const result = await pullModel(ref);
      process.stdout.write(`${result.path}\n`);
      ctx.exitCode = 0;
    });
}
