// `bmoe run MODEL -p PROMPT -n N ...`: flags a llama.cpp user knows (-p, -n, -t, -c, --temp,
// --top-k, --top-p, --seed, --min-p, the penalties, --context-shift) plus the spec's streaming flags, mapped onto @bmoe/engine options.
// `--image FILE` (repeatable) asks about pictures as llama-mtmd-cli does: one user message through
// the chat template, the images first and then the prompt. `-f FILE` reads the prompt from a file
// (`-`: standard input), one trailing newline dropped, as llama-completion -f.
import { InvalidArgumentError, type Command } from 'commander';
import { usageError, type CliContext } from '../context.js';
import { readFileArgument } from '../file-argument.js';
import { addConstraintOptions, constraintOptions, type ConstraintFlags } from '../constraint-flags.js';
import { addContextOptions, addGenerateOptions, addStreamingOptions, cliOption, modelCommand, prepareGeneration, SAMPLING_KEYS, tableOption, type ModelFlags } from '../model-options.js';

interface RunFlags extends ModelFlags, ConstraintFlags {
  prompt?: string;
  file?: string;
  image?: string[];
  chat?: boolean;
  chatml?: boolean;
  think: boolean;
  csv?: string;
  json?: boolean;
  promptCache?: string;
}

/**
 * The prompt in `path` (`-`: standard input), as llama-completion -f reads it: the whole file,
 * one trailing newline dropped. Not UTF-8 text, or unreadable: a usage error naming the file.
 */
export function readPromptFile(path: string): string {
  const bytes = readFileArgument(path, { stdin: true });
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidArgumentError(`${path === '-' ? 'standard input' : path} is not UTF-8 text`);
  }
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** `--image a.png --image b.jpg` → ['a.png', 'b.jpg']. */
const addImage = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** The `bmoe run` command: its flags in help (and README) order, the engine's from the option table. */
export function runCommand(program: Command): Command {
  const run = modelCommand(program, 'run', 'generate text from a GGUF model (raw prompt by default, like llama-completion -no-cnv; with --image, one chat message, like llama-mtmd-cli)')
    .addOption(cliOption('-p, --prompt <text>', 'prompt text', 'required: -p or -f'))
    .addOption(
      cliOption('-f, --file <file>', "the prompt from a file, '-' = standard input (llama-completion -f: one trailing newline dropped)", 'none', readPromptFile).conflicts(
        'prompt',
      ),
    )
    .addOption(
      cliOption(
        '--image <file>',
        `an image to ask about (PNG, JPEG, GIF, BMP, ...; repeatable): the prompt becomes one user message through the chat template, the images first, then the text, as llama-mtmd-cli sends it; needs the model's projector (--mmproj)`,
        'none',
      ).argParser(addImage),
    )
    .addOption(tableOption('maxTokens'));
  addContextOptions(run).addOption(cliOption('--chat', "format the prompt as one user message with the GGUF's chat template (--image implies it)", 'raw prompt'));
  addGenerateOptions(run, ['chatml', 'think', ...SAMPLING_KEYS]);
  addConstraintOptions(run)
    .addOption(
      cliOption(
        '--prompt-cache <file>',
        "as llama-completion --prompt-cache: load the KV state saved in this file when it exists (the prompt's prefix it holds is not evaluated again) and save the prompt's and the generated tokens' state to it after the run; a file of another model or context size is an error naming it (llama-completion warns and ignores it)",
        'none',
      ),
    )
    .addOption(cliOption('--csv <file>', 'write one row of per-token metrics per token to this CSV file'))
    .addOption(cliOption('--json', 'print one JSON event per line instead of plain text'));
  return addStreamingOptions(run);
}

export function registerRun(program: Command, ctx: CliContext): void {
  runCommand(program).action(async function (this: Command, model: string, flags: RunFlags) {
    // The settings rule: streaming or resident, cache, lanes, threads (the flags given win).
    const prompt = flags.prompt ?? flags.file;
    if (prompt === undefined) usageError(this, "required option '-p, --prompt <text>' or '-f, --file <file>' not specified");
    const images = flags.image ?? [];
    if (images.length > 0 && flags.mmproj === 'none') usageError(this, '--image needs the model\'s projector, and --mmproj none loads none');
    // Said at once, not after a pull or a load: a missing file, or one that is not an image.
    await checkImages(images);
    const { path, load, generate } = await prepareGeneration(this, model, flags);
    if (images.length > 0) await checkProjector(path, load.mmproj);
    // Loaded on use: `bmoe --help` and usage errors stay fast and need no built dependencies.
    const { runGeneration } = await import('../run-loop.js');
    ctx.exitCode = await runGeneration({
      model: path,
      prompt,
      images,
      // --chatml, --no-think and --image imply --chat.
      chat: Boolean(flags.chat || flags.chatml || !flags.think || images.length > 0),
      load,
      generate: { ...generate, ...constraintOptions(flags) },
      csv: flags.csv,
      json: Boolean(flags.json),
      promptCache: flags.promptCache,
    });
  });
}

/** Each --image is an image file; else a one-line error naming it. */
async function checkImages(images: readonly string[]): Promise<void> {
  if (images.length === 0) return;
  const { checkImageFile } = await import('../image-files.js');
  for (const image of images) {
    try {
      await checkImageFile(image);
    } catch (err) {
      throw new Error(`--image ${(err as Error).message}`, { cause: err });
    }
  }
}

/** Loading `model` with `mmproj` (a projectorOption) takes a projector; else a one-line error, before the load. */
async function checkProjector(model: string, mmproj: string | undefined): Promise<void> {
  const { projectorPath } = await import('../projector.js');
  if ((await projectorPath(model, mmproj)) === null) {
    throw new Error(`--image: ${model} has no projector beside it (an mmproj*.gguf in its folder) to read images with: give one with --mmproj FILE`);
  }
}
