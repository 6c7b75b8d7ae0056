// `bmoe chat`: one model, one session for the whole conversation (each turn resends the history
// and the engine reuses the KV prefix it already holds), replies streamed as they come. Ctrl-C
// stops the running reply; at the prompt a second Ctrl-C, Ctrl-D or /exit leaves. With --session
// FILE the conversation resumes from FILE when it is there and is saved to it on leaving; /save
// writes it at any time. With the model's projector loaded, `/image PATH` (or a file dropped on
// the terminal) attaches an image to the next message (attach.ts).
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import pc from 'picocolors';
import { BmoeError, loadModel, type ChatMessage, type GenerateOptions, type GenerationResult, type LoadOptions, type Model, type Session } from '@bmoe/engine';
import { endOfRunLineOptions, formatEndOfRunLines } from '@bmoe/engine/metrics';
import { EXIT_FAILURE, EXIT_INTERRUPTED } from '../context.js';
import { formatBytes, warnStream } from '../format.js';
import { reportError } from '../report-error.js';
import { attachedText, Attachments, droppedImages, imageArgPaths, readAttachment, type Attached } from './attach.js';
import { PipedInput, TtyInput, type ChatInput } from './input.js';
import { streamReply, type ReplyView } from './reply.js';
import { checkWritable, savedLine, stateExists } from './session-file.js';
import { StatusLine } from './status.js';

export interface ChatSpec {
  model: string;
  load: LoadOptions;
  /** Per reply: -n, sampling, --chatml, --no-think. */
  generate: Omit<GenerateOptions, 'signal'>;
  /** A system message before the conversation. Default: none (on resuming, the saved one). */
  system?: string;
  /** --session FILE: resume the conversation saved there (when it exists), save it there on leaving. */
  session?: string;
}

export interface ChatIo {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

const PROMPT = '>>> ';

const HELP = [
  'type a message and Enter to send it; Ctrl-C stops a reply',
  '/reset        forget the conversation',
  '/stats        the numbers of the last reply (the end-of-run lines of bmoe run)',
  '/save [PATH]  save the conversation and its KV cache to PATH (default: the --session file)',
  '/image PATH   attach an image to the next message (repeatable; a file dropped on the terminal is attached too)',
  '/image        list the images attached; /image clear drops them',
  '/exit         leave (also Ctrl-D, or Ctrl-C twice at the prompt); with --session, saves first',
];

const SAVE_USAGE = 'usage: /save PATH (or start the chat with --session FILE)';
const NO_PROJECTOR = 'this model takes no images: no projector is loaded (start bmoe chat with --mmproj FILE, or put its mmproj*.gguf beside the model)';

/** A command's first word: `/name` (a dropped path, `/home/me/a.png …`, has more slashes: it is a message). */
const COMMAND = /^\/[A-Za-z?]*$/;

const isFile = (path: string): Promise<boolean> => stat(path).then((s) => s.isFile(), () => false);
const images = (n: number): string => `${n} image${n === 1 ? '' : 's'}`;

/** What a session file gave back: the conversation resumed. */
interface Resumed {
  messages: number;
  tokens: number;
}

/**
 * Runs the chat until the user leaves; resolves to the exit code. Throws when the model does not
 * load, or when the --session file is there but cannot be resumed (another model or context
 * size, damaged, not a session file): that file is left as it is.
 */
export async function runChat(spec: ChatSpec, io: ChatIo = process): Promise<number> {
  const file = spec.session;
  const resume = file !== undefined && (await stateExists(file)) ? file : null;
  if (file !== undefined && resume === null) await checkWritable(file, 'session');
  const model = await loadModel(spec.model, spec.load);
  warnStream(model.info);
  try {
    // The session's system message: --system, else (resuming) the one the file was saved with
    // (session.load() restores it when the session has none of its own). Turn preparation: while
    // the user types, the last answer is evaluated as the next turn sends it back.
    const session = model.createSession({ prepareTurns: true, ...(spec.system === undefined ? {} : { system: spec.system }) });
    let resumed: Resumed | null = null;
    // load() rather than createSession({ state }): a damaged file is refused here, before the
    // first message, not by the first reply; and the tokens it restored are known for the line.
    if (resume !== null) resumed = { tokens: (await session.load(resume)).tokens, messages: session.history.length };
    return await new Chat(spec, io, model, session, resumed).run();
  } finally {
    await model.close().catch(() => undefined);
  }
}

class Chat {
  private readonly interactive: boolean;
  private readonly view: ReplyView;
  private readonly colors: ReturnType<typeof pc.createColors>;
  private last: GenerationResult | null = null;
  private running: AbortController | null = null;
  private readonly attachments = new Attachments();

  constructor(
    private readonly spec: ChatSpec,
    private readonly io: ChatIo,
    private readonly model: Model,
    private readonly session: Session,
    private readonly resumed: Resumed | null,
  ) {
    this.interactive = Boolean(io.stdin.isTTY);
    const tty = Boolean(io.stdout.isTTY);
    this.colors = pc.createColors(tty && pc.isColorSupported);
    this.view = {
      write: (text) => io.stdout.write(text),
      styled: this.colors.isColorSupported,
      think: spec.generate.think !== false,
      dim: this.colors.dim,
      status: tty ? new StatusLine(io.stdout, this.colors.dim) : null,
      streaming: model.info.options.stream !== null,
      notes: this.interactive,
    };
  }

  async run(): Promise<number> {
    this.announce();
    const input: ChatInput = this.interactive ? new TtyInput(this.io.stdin, this.io.stdout.isTTY ? this.io.stdout : this.io.stderr) : new PipedInput(this.io.stdin);
    // SIGINT from elsewhere (`kill -INT`, or the terminal when stdin is piped) acts as Ctrl-C does.
    const onSigint = (): void => this.interrupt();
    const onResize = (): void => this.view.status?.resize();
    process.on('SIGINT', onSigint);
    this.io.stdout.on('resize', onResize);
    try {
      const code = await this.loop(input);
      // Leaving cleanly (not after a failure, not by process.exit on Ctrl-C while piped): --session saves.
      return code === 0 && this.spec.session !== undefined ? await this.saveOnExit(this.spec.session) : code;
    } finally {
      process.off('SIGINT', onSigint);
      this.io.stdout.off('resize', onResize);
      input.close();
    }
  }

  private async loop(input: ChatInput): Promise<number> {
    let interrupts = 0;
    for (;;) {
      const waiting = this.attachments.list.length;
      const ev = await input.read(this.colors.bold(waiting > 0 ? `[${images(waiting)}] ${PROMPT}` : PROMPT));
      if (ev.type === 'eof') return 0;
      if (ev.type === 'interrupt') {
        interrupts = ev.cleared ? 0 : interrupts + 1;
        if (interrupts >= 2) return 0;
        if (!ev.cleared) this.say('(Ctrl-C again, Ctrl-D or /exit to leave)');
        continue;
      }
      interrupts = 0;
      const line = ev.text.trim();
      if (line === '') continue;
      if (COMMAND.test(line.split(/\s/, 1)[0]!)) {
        if ((await this.command(line)) === 'exit') return 0;
        continue;
      }
      const message = await this.compose(line);
      if (message === null) continue;
      const code = await this.reply(message, input);
      if (code !== null) return code;
    }
  }

  /**
   * The message a line sends: its text, after the images attached and those dropped into it. Null
   * when nothing is to be sent: a dropped image could not be attached (said in one line), or the
   * line was only dropped paths (attached, for the next message).
   */
  private async compose(line: string): Promise<string | ChatMessage | null> {
    const { text, paths } = await droppedImages(line, isFile);
    if (paths.length > 0) {
      const added = await this.attach(paths);
      if (added === null) return null;
      if (text === '') {
        this.say(`(attached ${attachedText(added)}: it goes with your next message)`);
        return null;
      }
      if (this.interactive) this.say(`(with ${attachedText(this.attachments.list)})`);
    }
    return this.attachments.message(text);
  }

  /** Reads and attaches the images at `paths`, all or none: null (and one line) when one cannot be. */
  private async attach(paths: readonly string[]): Promise<Attached[] | null> {
    if (this.model.info.projector === null) {
      this.error(NO_PROJECTOR);
      return null;
    }
    const read: Attached[] = [];
    for (const path of paths) {
      try {
        read.push(await readAttachment(path));
      } catch (err) {
        this.error((err as Error).message);
        return null;
      }
    }
    for (const image of read) this.attachments.add(image);
    return read;
  }

  /** `/image PATH...` attaches, `/image` lists, `/image clear` drops. */
  private async imageCommand(arg: string): Promise<void> {
    if (arg === 'clear') {
      const dropped = this.attachments.clear();
      this.say(dropped.length === 0 ? '(no images attached)' : `(dropped ${attachedText(dropped)})`);
    } else if (arg === '') {
      const list = this.attachments.list;
      this.say(list.length === 0 ? '(no images attached: /image PATH attaches one)' : `(attached for the next message: ${attachedText(list)})`);
    } else {
      const added = await this.attach(await imageArgPaths(arg, isFile));
      if (added) this.say(`(attached ${attachedText(added)}: it goes with your next message)`);
    }
  }

  /** One reply; a failed one is reported and the chat goes on, unless the model file changed. */
  private async reply(message: string | ChatMessage, input: ChatInput): Promise<number | null> {
    const ac = new AbortController();
    this.running = ac;
    const unwatch = input.watchInterrupt(() => this.interrupt());
    try {
      this.last = await streamReply(this.session, message, { ...this.spec.generate, signal: ac.signal }, this.view);
      if (!this.interactive && this.last.stopReason === 'context') this.io.stderr.write('bmoe chat: the context is full\n');
      return null;
    } catch (err) {
      reportError(err);
      return err instanceof BmoeError && err.code === 'E_MODEL_CHANGED' ? 1 : null;
    } finally {
      unwatch();
      this.running = null;
    }
  }

  /** Ctrl-C: stops the running reply; a second one while it stops (or any without a reply, piped) exits. */
  private interrupt(): void {
    const running = this.running;
    if (running && !running.signal.aborted) {
      running.abort();
    } else if (running || !this.interactive) {
      // "Now": no waiting for the native side; the screen gets its last row back first.
      this.view.status?.stop();
      process.exit(EXIT_INTERRUPTED);
    }
  }

  private async command(line: string): Promise<'exit' | null> {
    const [name = ''] = line.split(/\s+/);
    const arg = line.slice(name.length).trim();
    switch (name) {
      case '/exit':
      case '/quit':
      case '/bye':
        return 'exit';
      case '/reset':
        this.session.reset();
        this.last = null;
        this.say('(conversation forgotten)');
        return null;
      case '/stats':
        for (const l of this.stats()) this.io.stdout.write(`${l}\n`);
        return null;
      case '/save': {
        const path = arg || this.spec.session;
        if (path === undefined) this.say(SAVE_USAGE);
        else if (this.session.cachedTokens.length === 0) this.say('nothing to save yet (the conversation is empty)');
        else {
          try {
            this.say(savedLine(path, await this.session.save(path)));
          } catch (err) {
            reportError(err);
          }
        }
        return null;
      }
      case '/image':
        await this.imageCommand(arg);
        return null;
      case '/help':
      case '/?':
        for (const l of HELP) this.io.stdout.write(`${l}\n`);
        return null;
      default:
        this.say(`unknown command ${name} (/help lists them)`);
        return null;
    }
  }

  /** The end-of-run lines of the last reply, and what it cost in context. */
  private stats(): string[] {
    const last = this.last;
    if (!last) return ['no reply yet'];
    const stream = this.model.info.options.stream;
    // An image's cells are prompt tokens (the engine counts them): say how many images they include.
    const shown = this.session.history.reduce((n, m) => n + (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image').length : 0), 0);
    return [
      ...formatEndOfRunLines(last.summary, endOfRunLineOptions(stream)),
      `context: ${last.promptTokens} prompt tokens${shown > 0 ? ` (${images(shown)} among them)` : ''}, ${last.promptTokensReused} reused from the KV cache; ` +
        `${last.promptTokens + last.generatedTokens} of ${this.model.info.options.contextSize} in use; stop: ${last.stopReason}`,
    ];
  }

  /** --session FILE on leaving: the conversation saved, one line on stderr; exit 1 when it cannot be written. */
  private async saveOnExit(file: string): Promise<number> {
    if (this.session.cachedTokens.length === 0) {
      const left = (await stateExists(file)) ? 'left as it was' : 'not written';
      this.io.stderr.write(`bmoe chat: nothing to save (the conversation is empty): ${file} ${left}\n`);
      return 0;
    }
    try {
      this.io.stderr.write(`bmoe chat: ${savedLine(file, await this.session.save(file))}\n`);
      return 0;
    } catch (err) {
      reportError(err);
      return EXIT_FAILURE;
    }
  }

  private say(text: string): void {
    this.io.stdout.write(`${this.colors.dim(text)}\n`);
  }

  /** A refused command or attachment: one `bmoe: error:` line, and the chat goes on. */
  private error(text: string): void {
    reportError(new Error(text));
  }

  private announce(): void {
    const info = this.model.info;
    const how = info.options.stream ? `experts streamed, cache ${formatBytes(info.stream?.budgetBytes ?? 0)}` : 'resident';
    const sees = info.projector ? `, images with ${basename(info.projector.path)}` : '';
    this.io.stderr.write(
      `bmoe chat: ${basename(this.spec.model)} (${info.architecture}, ${formatBytes(info.fileBytes)}, ${how}${sees}), loaded in ${(info.load.ms / 1000).toFixed(2)} s` +
        (this.interactive ? '; /help for commands, Ctrl-D to leave\n' : '\n'),
    );
    const r = this.resumed;
    if (r) {
      this.io.stderr.write(
        `bmoe chat: resumed ${this.spec.session}: ${r.messages} message${r.messages === 1 ? '' : 's'}, ${r.tokens} token${r.tokens === 1 ? '' : 's'} cached\n`,
      );
    }
  }
}
