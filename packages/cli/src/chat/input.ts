// Where the chat's lines come from. On a terminal: Node's readline (line editing, history with the
// arrow keys), one interface per prompt. While a reply streams the terminal stays in raw mode
// without echo: Ctrl-C (byte 0x03) stops the reply, and other keys typed then do not land in the
// reply's text but wait for the next prompt, one line at a time, as a shell's type-ahead does
// (a Ctrl-C throws them away). Piped: plain lines until the end of the input, no prompt.
import { createInterface, type Interface } from 'node:readline/promises';

export type InputEvent =
  | { type: 'line'; text: string }
  /** The input ended (Ctrl-D on an empty line, or the end of piped input). */
  | { type: 'eof' }
  /** Ctrl-C at the prompt; `cleared` when it threw away a typed line. */
  | { type: 'interrupt'; cleared: boolean };

export interface ChatInput {
  /** The next line (showing `prompt` first on a terminal). */
  read(prompt: string): Promise<InputEvent>;
  /** Until the returned function is called, Ctrl-C typed on the terminal calls `onInterrupt` (no-op when piped). */
  watchInterrupt(onInterrupt: () => void): () => void;
  close(): void;
}

const CTRL_C = '\x03';

/** A terminal: readline with history, one interface per prompt. */
export class TtyInput implements ChatInput {
  private history: string[] = [];
  private rl: Interface | null = null;
  /** Keys typed while a reply streamed, not yet given to a prompt. */
  private typeahead = '';

  constructor(
    private readonly input: NodeJS.ReadStream,
    private readonly output: NodeJS.WriteStream,
  ) {}

  read(prompt: string): Promise<InputEvent> {
    this.replayTypeahead();
    const rl = createInterface({
      input: this.input,
      output: this.output,
      terminal: true,
      history: this.history,
      historySize: 500,
      removeHistoryDuplicates: true,
    });
    this.rl = rl;
    rl.on('history', (h: string[]) => (this.history = [...h]));
    return new Promise<InputEvent>((resolve) => {
      let done = false;
      const finish = (ev: InputEvent, echo = ''): void => {
        if (done) return;
        done = true;
        if (echo) this.output.write(echo);
        this.rl = null;
        rl.close();
        resolve(ev);
      };
      rl.on('line', (text) => finish({ type: 'line', text }));
      rl.on('SIGINT', () => finish({ type: 'interrupt', cleared: rl.line !== '' }, '^C\n'));
      // Ctrl-D on an empty line closes the interface itself.
      rl.on('close', () => finish({ type: 'eof' }, '\n'));
      rl.setPrompt(prompt);
      rl.prompt();
    });
  }

  watchInterrupt(onInterrupt: () => void): () => void {
    const onData = (data: Buffer | string): void => {
      const keys = typeof data === 'string' ? data : data.toString('utf8');
      const ctrlC = keys.lastIndexOf(CTRL_C);
      if (ctrlC < 0) {
        this.typeahead += keys;
        return;
      }
      this.typeahead = keys.slice(ctrlC + 1);
      onInterrupt();
    };
    this.input.setRawMode(true);
    this.input.on('data', onData).resume();
    return () => {
      this.input.off('data', onData).pause();
      this.input.setRawMode(false);
    };
  }

  /**
   * Puts the type-ahead's first line (through its Enter) back into the input, where the next
   * interface reads it as typed keys; a later line waits for the prompt after.
   */
  private replayTypeahead(): void {
    if (this.typeahead === '') return;
    const enter = this.typeahead.search(/[\r\n]/);
    const line = enter < 0 ? this.typeahead : this.typeahead.slice(0, enter + 1);
    this.typeahead = this.typeahead.slice(line.length);
    this.input.unshift(Buffer.from(line, 'utf8'));
  }

  close(): void {
    this.rl?.close();
    this.rl = null;
  }
}

/** Piped input: one line at a time, no prompt, 'eof' at the end. */
export class PipedInput implements ChatInput {
  private readonly rl: Interface;
  private readonly lines: AsyncIterator<string>;

  constructor(input: NodeJS.ReadableStream) {
    this.rl = createInterface({ input, terminal: false, crlfDelay: Infinity });
    this.lines = this.rl[Symbol.asyncIterator]();
  }

  async read(): Promise<InputEvent> {
    const next = await this.lines.next();
    return next.done ? { type: 'eof' } : { type: 'line', text: next.value };
  }

  watchInterrupt(): () => void {
    return () => undefined;
  }

  close(): void {
    this.rl.close();
  }
}
