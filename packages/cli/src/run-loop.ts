// The generation loop shared by `bmoe run` and `bmoe demo`: load, stream text (or JSON events)
// to stdout, optional per-token CSV, end-of-run lines on stderr, Ctrl-C as a clean abort; with a
// prompt cache, the session's KV state loaded from a file before and saved to it after.
import { loadModel, type ChatMessage, type GenerateOptions, type LoadOptions, type Model, type TokenEvent } from '@bmoe/engine';
import { endOfRunLineOptions, formatEndOfRunLines, type RunSummary } from '@bmoe/engine/metrics';
import { checkWritable, savedLine, stateExists } from './chat/session-file.js';
import { EXIT_INTERRUPTED } from './context.js';
import { CsvFile } from './csv-file.js';
import { warnStream } from './format.js';

export interface GenerationSpec {
  model: string;
  prompt: string;
  /** Send the prompt as one user message through the chat template. */
  chat: boolean;
  /** Images (file paths) the user message carries before the prompt's text; they need `chat`. */
  images?: readonly string[];
  load: LoadOptions;
  generate: Omit<GenerateOptions, 'signal'>;
  /** Per-token CSV path. */
  csv?: string;
  /** One JSON event per line on stdout instead of plain text. */
  json: boolean;
  /**
   * --prompt-cache FILE: the session's state loaded from it when it exists (a file of another
   * model or context size throws, naming it), and saved to it after a run that was not interrupted.
   */
  promptCache?: string;
  /** A line printed on stderr once the model is loaded (the demo's intro). */
  intro?: string;
  /** A closing sentence on stderr after the end-of-run lines (the demo's explanation). */
  outro?: (summary: RunSummary) => string;
}

/** Runs one generation; resolves to the exit code (0, or 130 after Ctrl-C). Throws on failure. */
export async function runGeneration(spec: GenerationSpec): Promise<number> {
  const cacheFile = spec.promptCache;
  const cached = cacheFile !== undefined && (await stateExists(cacheFile));
  if (cacheFile !== undefined && !cached) await checkWritable(cacheFile, 'prompt cache');
  const model = await loadModel(spec.model, spec.load);
  warnStream(model.info);
  let csv: CsvFile | null = null;
  const ac = new AbortController();
  let interrupted = false;
  const onSigint = (): void => {
    // A second Ctrl-C means "now": do not wait for the native side to wind down.
    if (interrupted) process.exit(EXIT_INTERRUPTED);
    interrupted = true;
    ac.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    csv = spec.csv ? await CsvFile.create(spec.csv) : null;
    if (spec.intro) process.stderr.write(`${spec.intro}\n`);
    const session = model.createSession();
    if (cacheFile !== undefined) {
      const loaded = cached ? (await session.load(cacheFile)).tokens : null;
      process.stderr.write(`bmoe: prompt cache: ${loaded === null ? `${cacheFile} not there yet, saved after the run` : `loaded ${cacheFile} (${loaded} tokens)`}\n`);
    }
    const input = spec.chat ? [userMessage(spec.prompt, spec.images ?? [])] : spec.prompt;
    const gen = session.generate(input, { ...spec.generate, signal: ac.signal });
    let lastText = '';
    for await (const ev of gen) {
      if (spec.json) writeLine(tokenEvent(ev));
      else if (ev.text) {
        process.stdout.write(ev.text);
        lastText = ev.text;
      }
      await csv?.write(ev.metrics);
    }
    const res = await gen.result;
    if (!spec.json && lastText && !lastText.endsWith('\n')) process.stdout.write('\n');

    if (csv) {
      // An interrupted run leaves no CSV: a partial one would pass for a complete measurement.
      await (interrupted ? csv.discard() : csv.commit());
      csv = null;
    }
    const stream = model.info.options.stream;
    for (const line of formatEndOfRunLines(res.summary, endOfRunLineOptions(stream))) {
      process.stderr.write(`${line}\n`);
    }
    if (cacheFile !== undefined) {
      // An interrupted run leaves the file as it was, as it leaves no CSV.
      const saved = interrupted ? `${cacheFile} not saved (interrupted)` : savedLine(cacheFile, await session.save(cacheFile));
      process.stderr.write(`bmoe: prompt cache: ${res.promptTokensReused} of ${res.promptTokens} prompt tokens reused; ${saved}\n`);
    }
    if (spec.outro) process.stderr.write(`${spec.outro(res.summary)}\n`);
    if (spec.json) {
      writeLine({
        type: 'done',
        stopReason: res.stopReason,
        promptTokens: res.promptTokens,
        promptTokensReused: res.promptTokensReused,
        generatedTokens: res.generatedTokens,
        text: res.text,
        summary: res.summary,
        load: model.info.load,
        // Now, not at load: auto's choice of overlap and route-ahead, and its probe medians, are measured while decoding.
        stream: model.streamInfo(),
      });
    }
    return interrupted ? EXIT_INTERRUPTED : 0;
  } finally {
    process.off('SIGINT', onSigint);
    await csv?.discard();
    await closeQuietly(model);
  }
}

/**
 * The prompt as one user message; with images, they come first and the text after, as
 * llama-mtmd-cli puts its markers before the prompt (no separator between them: the chat layer
 * joins a media marker and the text that follows as they are).
 */
function userMessage(prompt: string, images: readonly string[]): ChatMessage {
  if (images.length === 0) return { role: 'user', content: prompt };
  return { role: 'user', content: [...images.map((image) => ({ type: 'image' as const, image })), { type: 'text', text: prompt }] };
}

function tokenEvent(ev: TokenEvent): Record<string, unknown> {
  return { type: 'token', tokenIndex: ev.tokenIndex, tokenId: ev.tokenId, text: ev.text, eog: ev.eog, metrics: ev.metrics };
}

function writeLine(obj: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

async function closeQuietly(model: Model): Promise<void> {
  try {
    await model.close();
  } catch {
    // Closing is best effort on the way out; the run's own outcome is what gets reported.
  }
}
