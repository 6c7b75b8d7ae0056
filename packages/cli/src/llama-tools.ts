// llama.cpp's own tools, built beside the native addon from the same pinned source: the reference
// that bmoe's greedy output must equal. Exported so other packages' tests can reuse them.
import { execFile } from 'node:child_process';
import { llamaToolPath } from '@bmoe/engine';

/** Path of a llama.cpp tool built from the pinned source (e.g. 'llama-completion'), or null when it is not built. */
export function findLlamaTool(name: string): string | null {
  return llamaToolPath(name);
}

export interface LlamaCompletionOptions {
  model: string;
  prompt: string;
  /** Tokens to generate. Default 32. */
  nPredict?: number;
  /** Default 2. */
  threads?: number;
  /** Appended to the defaults (e.g. ['--override-kv', 'qwen3moe.expert_used_count=int:6']). */
  extraArgs?: readonly string[];
  /** Default: the one built from the pinned source (a one-line error when it is not built). */
  binary?: string;
  /** Let llama.cpp repack weights (its default and bmoe's; false is `-nr`, bmoe's `--no-repack`). Default true. */
  repack?: boolean;
}

/**
 * Greedy text from `llama-completion -no-cnv --temp 0 --no-warmup` (repacking on, as bmoe's
 * default; `-nr` with repack false), without the prompt echo (--no-display-prompt) and without the tool's trailing
 * " [end of text]" marker and blank lines. The argv is @bmoe/bench's llamaCompletionArgv, the one
 * the bench's peer rows run: loaded on use, as the CLI's optional peer (llama-completion itself
 * is built only in a checkout, which has the bench).
 */
export async function runLlamaCompletion(opts: LlamaCompletionOptions): Promise<string> {
  const { llamaCompletionArgv } = await import('@bmoe/bench');
  const [bin, ...args] = llamaCompletionArgv({
    model: opts.model,
    prompt: opts.prompt,
    nPredict: opts.nPredict ?? 32,
    threads: opts.threads ?? 2,
    repack: opts.repack ?? true,
    textOnly: true,
    extraArgs: opts.extraArgs,
    binary: opts.binary,
  });
  // llama-completion prints through llama.cpp's asynchronous logger, whose queue can still hold the
  // last tokens when the process exits on a loaded machine (the logger is leaked on purpose, never
  // flushed at exit). A complete run ends with the tool's closing "\n\n": retry the (deterministic)
  // run until that arrives; a text cut short is never returned (it would read as a mismatch).
  for (let attempt = 1; ; attempt++) {
    const stdout = await new Promise<string>((ok, fail) => {
      const child = execFile(bin, args, { maxBuffer: 64 << 20, encoding: 'utf8', timeout: 300_000 }, (err, out, errText) => {
        if (err) fail(new Error(`llama-completion failed: ${err.message.split('\n')[0]} ${String(errText).split('\n').slice(-3).join(' ')}`));
        else ok(out);
      });
      child.stdin?.end();
    });
    if (stdout.endsWith('\n\n')) return stripCompletionOutput(stdout);
    if (attempt >= 20) throw new Error(`llama-completion's output was cut short in ${attempt} runs (its asynchronous logger lost the tail at exit)`);
  }
}

/** Removes what llama-completion adds around the generated text on stdout. */
export function stripCompletionOutput(stdout: string): string {
  let s = stdout;
  if (s.endsWith('\n\n')) s = s.slice(0, -2);
  if (s.endsWith(' [end of text]\n')) s = s.slice(0, -' [end of text]\n'.length);
  return s;
}

export interface LlamaMtmdOptions {
  model: string;
  mmproj: string;
  /** Image files, in order: the user message is one marker per image, then the prompt. */
  images: readonly string[];
  prompt: string;
  /** Tokens to generate. Default 32. */
  nPredict?: number;
  /** Default 2. */
  threads?: number;
  /** Default: the one built from the pinned source (a one-line error when it is not built). */
  binary?: string;
}

/**
 * Greedy text of llama-mtmd-cli's single turn (`-n N --temp 0 -c 4096 -b 512 -ub 512 --jinja`):
 * the user message is a media marker per image then the prompt, through the chat template, as
 * `bmoe run --image` sends it. Its stdout is "\n", the answer and a closing "\n\n" (printed
 * through the same asynchronous logger as llama-completion's: a run whose closing did not arrive
 * is run again); what comes back is the answer.
 */
export async function runLlamaMtmd(opts: LlamaMtmdOptions): Promise<string> {
  const bin = opts.binary ?? findLlamaTool('llama-mtmd-cli');
  if (bin === null) throw new Error("llama-mtmd-cli is not built (it is built beside llama-completion: packages/core-native's native build)");
  const args = ['-m', opts.model, '--mmproj', opts.mmproj, ...opts.images.flatMap((i) => ['--image', i]), '-p', opts.prompt];
  args.push('-n', String(opts.nPredict ?? 32), '--temp', '0', '-c', '4096', '-b', '512', '-ub', '512', '--jinja', '-t', String(opts.threads ?? 2));
  for (let attempt = 1; ; attempt++) {
    const stdout = await new Promise<string>((ok, fail) => {
      const child = execFile(bin, args, { maxBuffer: 64 << 20, encoding: 'utf8', timeout: 300_000 }, (err, out, errText) => {
        if (err) fail(new Error(`llama-mtmd-cli failed: ${err.message.split('\n')[0]} ${String(errText).split('\n').slice(-3).join(' ')}`));
        else ok(out);
      });
      child.stdin?.end();
    });
    if (stdout.endsWith('\n\n')) return stdout.slice(stdout.startsWith('\n') ? 1 : 0, -2);
    if (attempt >= 20) throw new Error(`llama-mtmd-cli's output was cut short in ${attempt} runs (its asynchronous logger lost the tail at exit)`);
  }
}
