// `bmoe pull REF`: download a GGUF model (every shard of a split one) into the models folder,
// resumable and checked against its published SHA-256; prints the local path `bmoe run` loads. A
// vision model's image projector (the repository's mmproj GGUF) comes with it unless --no-mmproj.
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

When the repository holds an image projector (mmproj*.gguf: a vision model's), one comes with the
model (F16, else BF16, else F32), checked the same way; run, chat, serve and info load it with
the model. --no-mmproj leaves it.

Environment:
  BMOE_MODELS_DIR  where models go (default ~/.cache/bmoe/models; in Termux ~/bmoe/models)
  HF_TOKEN         sent as a Bearer token to the hub, for gated and private repositories
  HF_ENDPOINT      the hub's address (default https://huggingface.co)`;

export function registerPull(program: Command, ctx: CliContext): void {
  program
    .command('pull')
    .description('download a GGUF model from Hugging Face or a URL into the models folder (resumable, SHA-256 checked); prints its path')
    .argument('<ref>', 'hf:owner/repo[:QUANT], hf:owner/repo/path/file.gguf or an https URL')
    .option('--no-mmproj', "leave the repository's image projector (mmproj GGUF), which comes with the model by default")
    .addHelpText('after', HELP_AFTER)
    .action(async (ref: string, flags: { mmproj: boolean }) => {
      const result = await pullModel(ref, { mmproj: flags.mmproj });
      process.stdout.write(`${result.path}\n`);
      ctx.exitCode = 0;
    });
}
