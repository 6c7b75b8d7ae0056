// A real pseudo-terminal for `bmoe chat` tests: the built CLI runs in a detached tmux session of a
// fixed size on a private tmux server (its own socket, no config file); the test types keys into
// it and reads the screen back, as a person at a terminal would. Every wait is bounded and says
// what it waited for, with the screen, when it times out.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN } from './helpers.js';

const exec = promisify(execFile);

export const PROMPT = '>>> ';
/** What the wrapping shell prints when bmoe chat exits, before the status. */
const EXIT_MARK = 'bmoe chat exited with status ';

export interface TmuxOptions {
  columns?: number;
  rows?: number;
}

export class TmuxChat {
  private constructor(
    private readonly dir: string,
    private readonly socket: string,
  ) {}

  /**
   * Starts `node dist/bin.js ARGS` in a new detached session, under `sh -c` that prints its exit
   * status when it ends (tmux's own #{pane_dead_status} is sometimes left empty for a process that
   * has exited); the pane stays after that for the test to read.
   */
  static async start(args: readonly string[], opts: TmuxOptions = {}): Promise<TmuxChat> {
    const dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-tmux-'));
    const t = new TmuxChat(dir, join(dir, 'sock'));
    const command = `${[process.execPath, BIN, ...args].map(shellQuote).join(' ')}; echo "${EXIT_MARK}$?"`;
    await t.tmux('new-session', '-d', '-s', 'chat', '-x', String(opts.columns ?? 160), '-y', String(opts.rows ?? 48), command, ';', 'set-option', '-t', 'chat', 'remain-on-exit', 'on');
    return t;
  }

  /** Keys by tmux name (Enter, C-c, C-d). */
  async keys(...keys: string[]): Promise<void> {
    await this.tmux('send-keys', '-t', 'chat', ...keys);
  }

  /** Types `text` literally, then Enter. */
  async line(text: string): Promise<void> {
    await this.tmux('send-keys', '-t', 'chat', '-l', text);
    await this.keys('Enter');
  }

  /** The whole transcript (scrollback included), wrapped lines joined, trailing blanks dropped. */
  async screen(): Promise<string> {
    const { stdout } = await this.tmux('capture-pane', '-p', '-J', '-S', '-', '-E', '-', '-t', 'chat');
    return stdout
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .trimEnd();
  }

  /** Polls the screen until `test` returns a value (not undefined/false); fails after `timeoutMs` naming `what`. */
  async waitFor<T>(what: string, test: (screen: string) => T | undefined | false, timeoutMs = 60_000): Promise<T> {
    const until = performance.now() + timeoutMs;
    let screen = '';
    for (;;) {
      screen = await this.screen();
      const got = test(screen);
      if (got !== undefined && got !== false) return got;
      if (performance.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the screen:\n${screen}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The exit status once the program has exited; null while it runs. */
  async exitStatus(): Promise<number | null> {
    return exitOf(await this.screen()) ?? null;
  }

  /** Waits for the program to exit; its status. */
  async waitForExit(timeoutMs = 30_000): Promise<number> {
    return this.waitFor('bmoe chat to exit', exitOf, timeoutMs);
  }

  /** Ends the tmux server (and the program, if it still runs) and removes its folder. */
  async kill(): Promise<void> {
    await this.tmux('kill-server').catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  private tmux(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    return exec('tmux', ['-S', this.socket, '-f', '/dev/null', ...args], { env: { ...process.env, TERM: process.env.TERM || 'xterm', BMOE_DEBUG: '' } }).catch((err: Error) => {
      throw new Error(`tmux ${args[0]} failed (bmoe chat's terminal tests need tmux on PATH: apt-get install tmux): ${err.message}`);
    });
  }
}

/** The status the wrapping shell printed; undefined while the program runs. */
function exitOf(screen: string): number | undefined {
  const status = screen.split('\n').find((l) => l.startsWith(EXIT_MARK))?.slice(EXIT_MARK.length);
  return status === undefined ? undefined : Number(status);
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The reply printed after the `n`-th prompt line that sent `message` (0-based): the lines up to
 * the next prompt or `[note]` line, or undefined while that reply is not finished (no prompt after it yet).
 */
export function replyAfter(screen: string, message: string, n = 0): string | undefined {
  const lines = screen.split('\n');
  const starts = lines.flatMap((l, i) => (l === `${PROMPT}${message}` ? [i] : []));
  const start = starts[n];
  if (start === undefined) return undefined;
  const rest = lines.slice(start + 1);
  const next = rest.findIndex((l) => l.startsWith(PROMPT.trimEnd()));
  if (next < 0) return undefined;
  const end = rest.findIndex((l) => l.startsWith(PROMPT.trimEnd()) || /^\[.*\]$/.test(l));
  return rest.slice(0, end).join('\n');
}

/** A reply as the screen shows it: leading blanks dropped, trailing blanks of each line dropped. */
export function asShown(text: string): string {
  return text
    .replace(/^\s+/, '')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trimEnd();
}

/** The first line of the reply after the `n`-th prompt line that sent `message`, once it shows text. */
export function replyStarted(screen: string, message: string, n = 0): boolean {
  const lines = screen.split('\n');
  const start = lines.flatMap((l, i) => (l === `${PROMPT}${message}` ? [i] : []))[n];
  return start !== undefined && (lines[start + 1] ?? '').trim() !== '';
}

/** The screen ends at an empty prompt (the program waits for the next line). */
export function atPrompt(screen: string): boolean {
  return screen.split('\n').at(-1) === PROMPT.trimEnd();
}
