// One reply of `bmoe chat`: the session's next chat turn streamed to the terminal as it comes,
// thinking dimmed (or left out), the live status line under it, a note when it was cut short.
import type { ChatMessage, GenerateOptions, GenerationResult, Session, StopReason, TokenMetrics } from '@bmoe/engine';
import { optionRow } from '@bmoe/engine/options';
import { statusText, type StatusLine } from './status.js';
import { ThinkSplitter, type Segment, type SegmentKind } from './think.js';

export interface ReplyView {
  write(text: string): unknown;
  /**
   * Split thinking from the answer and drop the framing tokens (<think>, harmony channels).
   * false: the model's text as it is (plain output), thinking left out only when `think` is false.
   */
  styled: boolean;
  /** Show the thinking (dimmed when styled). */
  think: boolean;
  dim(text: string): string;
  /** The live status line; null when stdout is not a terminal. */
  status: StatusLine | null;
  /** The model streams its experts: the status shows flash MiB/token and cache hits. */
  streaming: boolean;
  /** Say after the text why a reply stopped early (interactive terminals). */
  notes: boolean;
}

/** The reply text a person sees: thinking and answer apart, leading blanks of each part dropped. */
export class ReplyPrinter {
  private readonly splitter = new ThinkSplitter();
  private kind: SegmentKind | null = null;
  private atLineStart = true;

  constructor(private readonly view: ReplyView) {}

  push(text: string): void {
    const { styled, think } = this.view;
    this.print(styled || !think ? this.splitter.push(text) : [{ kind: 'answer', text }]);
  }

  /** Ends the reply (and a `note` on a line of its own), so the next prompt starts on a line of its own. */
  end(note?: string): void {
    this.print(this.splitter.flush());
    if (!this.atLineStart) this.out('\n');
    if (note) this.out(`${this.view.dim(note)}\n`);
  }

  private print(segments: readonly Segment[]): void {
    for (const seg of segments) {
      if (seg.kind === 'think' && !this.view.think) continue;
      let text = seg.text;
      if (seg.kind !== this.kind) {
        text = text.replace(/^\s+/, '');
        if (text === '') continue;
        if (!this.atLineStart) this.out('\n');
        this.kind = seg.kind;
      }
      this.view.write(seg.kind === 'think' && this.view.styled ? this.view.dim(text) : text);
      this.atLineStart = text.endsWith('\n');
    }
  }

  private out(text: string): void {
    this.view.write(text);
    this.atLineStart = text.endsWith('\n');
  }
}

/** Why a reply stopped early, in a few words; null when it simply ended. */
export function stopNote(reason: StopReason, maxTokens: number | undefined): string | null {
  switch (reason) {
    case 'abort':
      return '[stopped]';
    case 'length':
      return `[cut at ${maxTokens ?? optionRow('maxTokens').defaultText} tokens: -n]`;
    case 'context':
      return '[the context is full: /reset starts over]';
    default:
      return null;
  }
}

/** Streams the session's next turn for `message` (text, or a user message with images); resolves to its result (also after an abort). */
export async function streamReply(
  session: Session,
  message: string | ChatMessage,
  generate: GenerateOptions,
  view: ReplyView,
): Promise<GenerationResult> {
  const printer = new ReplyPrinter(view);
  const metrics: TokenMetrics[] = [];
  const gen = session.chat(message, generate);
  view.status?.start();
  let res: GenerationResult;
  try {
    for await (const ev of gen) {
      printer.push(ev.text);
      metrics.push(ev.metrics);
      view.status?.update(() => statusText(metrics, view.streaming));
    }
    res = await gen.result;
  } catch (err) {
    view.status?.stop();
    printer.end();
    throw err;
  }
  view.status?.stop();
  const note = view.notes ? stopNote(res.stopReason, generate.maxTokens) : null;
  printer.end(note ?? undefined);
  return res;
}
