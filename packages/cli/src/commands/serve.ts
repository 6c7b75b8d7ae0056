// `bmoe serve MODEL`: the OpenAI-compatible server of @bmoe/server on one model, with every
// model/streaming flag of `bmoe run`. SIGTERM or Ctrl-C stops accepting, lets the running request
// finish (or aborts it after the grace period) and exits 0; a stop that native work holds up (a
// model load that does not end) is cut short after a deadline (see SHUTDOWN_HELP).
import { writeSync } from 'node:fs';
import { basename } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { usageError, type CliContext } from '../context.js';
import { formatBytes, warnStream } from '../format.js';
import type { ChosenSettings, LoadOptions } from '@bmoe/engine';
import { addContextOptions, addStreamingOptions, loadOptions, modelCommand, resolveModel, settingsLine, tableOption, type ModelFlags } from '../model-options.js';
import { intRange, nonNegativeInt } from '../parse.js';
import { optionRow } from '@bmoe/engine/options';

interface ServeFlags extends ModelFlags {
  host?: string;
  allowedHosts?: string[];
  port?: number;
  apiKey?: string;
  maxQueue?: number;
  parallel?: number;
  kvDir?: string;
  kvDirMb?: number;
  prepareTurns: boolean;
  modelId?: string;
  alias?: string[];
  cors?: string[];
  reasoningBudget?: number;
  reasoningBudgetMessage?: string;
  embeddings?: boolean;
  pooling?: (typeof POOLINGS)[number];
  allowImageUrls?: boolean;
  imageMaxBytes?: number;
  maxImages?: number;
}

/** `--pooling` (llama-server's, less 'none' and 'rank'): how an input's token states become one vector. */
const POOLINGS = ['model', 'mean', 'cls', 'last'] as const;

/** `a.lan, b.lan` → ['a.lan', 'b.lan']. */
function hostList(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
}

/** A flag given as a comma list, repeatable: the lists add up. */
function addList(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...hostList(value)];
}

/** `--cors`: origins as browsers send them (scheme://host[:port], no path) or '*'; the server normalizes case. */
function addOrigins(value: string, previous: string[] | undefined): string[] {
  const list = hostList(value);
  for (const o of list) {
    if (o !== '*' && !/^https?:\/\/[^/?#@\s]+\/?$/i.test(o)) throw new InvalidArgumentError(`'${o}' is not an origin: give scheme://host[:port] (https://app.example, http://localhost:5173) or '*'`);
  }
  return [...(previous ?? []), ...list];
}

/** The longest --reasoning-budget-message, in UTF-8 bytes (the server's and the native core's limit). */
const MAX_BUDGET_MESSAGE_BYTES = 4096;

function budgetMessage(value: string): string {
  if (Buffer.byteLength(value, 'utf8') > MAX_BUDGET_MESSAGE_BYTES) throw new InvalidArgumentError(`must be at most ${MAX_BUDGET_MESSAGE_BYTES} bytes (UTF-8)`);
  return value;
}

/** How long after the server's shutdown grace a stop may still run before `bmoe serve` ends itself. */
const FORCE_AFTER_GRACE_MS = 3000;

// The 5 s is @bmoe/server's DEFAULT_SHUTDOWN_GRACE_MS (not imported here: `bmoe --help` does not
// load the server), the 3 s FORCE_AFTER_GRACE_MS.
const SHUTDOWN_HELP = `
Stopping:
  SIGTERM or Ctrl-C stops accepting, answers waiting requests 503, lets the running request finish
  for up to 5 s (then aborts it) and exits 0. A model still loading is waited for up to 5 s.
  Native work cannot be interrupted: if the stop has not ended 3 s after that (a model load that
  hangs, a generation stuck in native code), or on a second SIGTERM or Ctrl-C, bmoe serve prints
  one line and ends by the signal's default action, as a process without a handler would: exit
  status 143 after SIGTERM, 130 after Ctrl-C (systemd counts a SIGTERM death as a clean stop).
`;

/**
 * Ends the process now by `signal`'s default action. Not process.exit(): Node's exit joins libuv's
 * worker threads, and one of them is stuck in native code (that is why we are here), so exit
 * would wait as long as it does.
 */
function endBySignal(signal: NodeJS.Signals, why: string): void {
  writeSync(2, `bmoe serve: ${why}; exiting now\n`);
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  // Should the signal be blocked or ignored, the end still comes.
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), 1000);
}

/** `bmoe serve` and its own flags (the model and streaming flags are added beside them). */
function serveCommand(program: Command): Command {
  return modelCommand(program, 'serve', 'serve a GGUF model over an OpenAI-compatible HTTP API (streamed tokens, live metrics, /metrics)')
    .option('--host <addr>', 'address to bind (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)')
    .option('--allowed-hosts <names>', 'Host names to answer besides localhost, 127.0.0.1, [::1] and --host (comma-separated; .example.lan = a domain and its subdomains); others get 403', hostList)
    .option('--port <N>', 'TCP port; 0 = any free port (default 8080)', intRange(0, 65535))
    .addOption(new Option('--api-key <key>', 'require Authorization: Bearer <key> on /v1 and /metrics').env('BMOE_API_KEY'))
    .option('--max-queue <N>', 'requests that may wait while every slot generates; more get 429 (default 8)', nonNegativeInt)
    .option('--parallel <N>', 'slots, as llama-server --parallel: conversations whose KV cache is kept at once, decoded together; a request goes to the slot holding the longest prefix of its prompt (default: as many as fit in half the memory the model leaves, 1 to 4, said at start)', intRange(1, 64))
    .option('--kv-dir <dir>', "save a conversation a slot gives up to DIR and restore it when it comes back (across restarts too); a full disk evicts, never fails a request (default: none)")
    .option('--kv-dir-mb <N>', "the --kv-dir budget in MiB: least recently used conversations go beyond it (default 4096)", intRange(1, 2 ** 30))
    .option('--no-prepare-turns', "do not evaluate, after a chat answer and while the client is away, the answer as the template renders it back (by default a slot does, in the background, so the next turn evaluates only its new message; a request arriving stops its step at once)")
    .option('--model-id <name>', "the model's name in /v1/models and in answers (default: the file name without .gguf); requests may name any model")
    .option('--alias <names>', 'more names /v1/models lists for the model (comma-separated, repeatable), as llama-server --alias', addList)
    .option('--cors <origins>', "web origins whose pages may call the server (https://app.example, http://localhost:5173; comma-separated, repeatable; '*' = any): CORS headers and preflight for those only (default: none)", addOrigins)
    // The engine's flags (their spelling and range, -1 to 2^24), as the server's defaults for requests.
    .addOption(
      tableOption('reasoningBudget', {
        help: "tokens the template's reasoning may take before its end is forced, for a request that sends no reasoning_budget_tokens (llama-server --reasoning-budget); 0 = none, -1 = unlimited, except that a forced tool call or JSON schema bounds it to half of max_tokens",
        defaultText: '-1',
      }),
    )
    .addOption(
      tableOption('reasoningBudgetMessage', {
        help: 'text written before the forced end of the reasoning when the budget runs out, for a request that sends no reasoning_budget_message (llama-server --reasoning-budget-message)',
      }).argParser(budgetMessage),
    )
    .option('--embeddings', 'serve POST /v1/embeddings (OpenAI\'s, as llama-server --embeddings), in an embedding context beside the slots; without it that endpoint answers 501')
    // @bmoe/server's image bounds (DEFAULT_IMAGE_MAX_BYTES, DEFAULT_MAX_IMAGES; not imported: `bmoe --help` does not load the server).
    .option('--allow-image-urls', 'fetch the http(s) image URLs of requests (any URL a client names, inside your network too: for clients you trust); without it only data URLs (base64) are read')
    .option('--image-max-bytes <N>', 'the largest image a request may send, in encoded bytes; larger is a 400 (default 20971520: 20 MiB, OpenAI\'s; at most 64 MiB)', intRange(1, 64 * 1024 * 1024))
    .option('--max-images <N>', 'images one request may hold; more is a 400 (default 16)', intRange(1, 1024))
    .addOption(
      new Option('--pooling <type>', "how --embeddings pools an input's token states into one vector, as llama-server --pooling: model = the GGUF's own (a generative model has none: choose mean, cls or last) (default model)").choices(POOLINGS),
    )
    .addHelpText('after', SHUTDOWN_HELP);
}

export function registerServe(program: Command, ctx: CliContext): void {
  const serve = serveCommand(program);
  addContextOptions(serve);
  addStreamingOptions(serve).action(async function (this: Command, model: string, flags: ServeFlags) {
    if (flags.pooling !== undefined && !flags.embeddings) usageError(this, '--pooling requires --embeddings');
    const { path, given } = await resolveModel(model, loadOptions(this, flags));
    // The settings rule (the flags given win); its line follows the listening line.
    const { settings, parallel } = await chooseServing(path, given, flags.parallel);
    // Loaded on use: `bmoe --help` and usage errors stay fast.
    const { createServer, DEFAULT_SHUTDOWN_GRACE_MS } = await import('@bmoe/server');
    const server = await createServer({
      model: path,
      load: settings.load,
      host: flags.host,
      allowedHosts: flags.allowedHosts,
      port: flags.port,
      // An empty BMOE_API_KEY means none.
      apiKey: flags.apiKey || undefined,
      maxQueue: flags.maxQueue,
      parallel: parallel.parallel,
      kvDir: flags.kvDir,
      kvDirMb: flags.kvDirMb, prepareTurns: flags.prepareTurns,
      onWarning: (line) => process.stderr.write(`bmoe serve: ${line}\n`),
      modelId: flags.modelId,
      aliases: flags.alias,
      cors: flags.cors,
      reasoningBudget: flags.reasoningBudget,
      reasoningBudgetMessage: flags.reasoningBudgetMessage,
      embeddings: flags.embeddings,
      pooling: flags.pooling,
      allowImageUrls: flags.allowImageUrls,
      imageMaxBytes: flags.imageMaxBytes,
      maxImages: flags.maxImages,
    });

    let stopping: Promise<void> | null = null;
    let onStopped: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (onStopped = resolve));
    const onSignal = (signal: NodeJS.Signals): void => {
      // A second signal means "now".
      if (stopping) return endBySignal(signal, `second ${signal}`);
      const what = server.state === 'loading' ? 'stopping; the model is still loading' : 'not accepting new requests; finishing the running one';
      process.stderr.write(`bmoe serve: ${signal}: ${what}\n`);
      stopping = server.close().finally(onStopped);
      // The deadline: close() gives up on a hung load after the grace, but the process cannot end
      // while a native call still runs on a worker thread. Unref'd: a clean stop exits before it.
      const deadline = DEFAULT_SHUTDOWN_GRACE_MS + FORCE_AFTER_GRACE_MS;
      const why = `native work (a model load or a generation) still running ${deadline / 1000} s after ${signal}`;
      setTimeout(() => endBySignal(signal, why), deadline).unref();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    try {
      const url = await server.listen();
      process.stderr.write(`bmoe serve: listening on ${url} (OpenAI base URL ${url}/v1), loading ${model}\n`);
      process.stderr.write(`${settingsLine(settings)}, ${parallel.reason}${flags.kvDir ? `, KV saved in ${flags.kvDir}` : ''}\n`);
      try {
        await server.ready;
      } catch (err) {
        if (stopping) {
          await stopped;
          ctx.exitCode = 0;
          return;
        }
        await server.close();
        throw err;
      }
      const info = server.model?.info;
      if (info && !stopping) {
        const how = info.options.stream ? `experts streamed, cache ${formatBytes(info.stream?.budgetBytes ?? 0)}` : 'resident';
        process.stderr.write(
          `bmoe serve: ready: model '${server.modelId}' (${info.architecture}, ${formatBytes(info.fileBytes)}, ${how}), ` +
            `loaded in ${(info.load.ms / 1000).toFixed(2)} s${flags.apiKey ? '; API key required' : ''}` +
            `${flags.embeddings ? `; /v1/embeddings on (pooling ${flags.pooling ?? 'model'})` : ''}` +
            `${info.projector ? `; images on (projector ${basename(info.projector.path)}, ${info.projector.projectorType}${flags.allowImageUrls ? '; image URLs fetched' : ''})` : ''}\n`,
        );
        warnStream(info);
      }
      await stopped;
      process.stderr.write('bmoe serve: stopped\n');
      ctx.exitCode = 0;
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  });
}

/**
 * The settings rule for the model, and the slots: `--parallel` as given, else as many as fit in
 * half the memory the model leaves (engine's chooseParallel), each holding the context size.
 */
async function chooseServing(path: string, given: LoadOptions, asked: number | undefined): Promise<{ settings: ChosenSettings; parallel: { parallel: number; reason: string } }> {
  const { chooseSettingsFor, chooseParallel, memoryLeft } = await import('@bmoe/engine');
  const { settings, model } = await chooseSettingsFor(path, given);
  const contextSize = settings.load.contextSize ?? (optionRow('contextSize').default as number);
  if (asked !== undefined) return { settings, parallel: { parallel: asked, reason: `${asked} slot${asked === 1 ? '' : 's'} (as asked)` } };
  return { settings, parallel: chooseParallel(model.kvBytesPerToken, contextSize, memoryLeft(model, settings)) };
}
