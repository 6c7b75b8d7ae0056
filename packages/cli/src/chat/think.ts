// Splits a reply's streamed text into thinking and answer, as the model families frame them:
//   Qwen3 / DeepSeek:  <think> … </think> answer
//   gpt-oss (harmony): <|channel|>analysis<|message|> … <|end|><|start|>assistant<|channel|>final<|message|> answer
//   Gemma 4:           <|channel>thought\n … <channel|> answer
// The framing tokens themselves are dropped; a marker split across tokens is held back until it
// is whole (or turns out to be text). Pure: tested without a model (test/chat-think.test.ts).

export type SegmentKind = 'think' | 'answer';

export interface Segment {
  kind: SegmentKind;
  text: string;
}

/** What a marker does: switch to thinking or answering, open a header, or nothing (dropped). */
type Action =
  | { to: SegmentKind }
  | { header: 'harmony' | 'gemma' }
  | { message: true }
  | { drop: true };

const MARKERS: ReadonlyArray<readonly [string, Action]> = [
  ['<think>', { to: 'think' }],
  ['</think>', { to: 'answer' }],
  // harmony: `<|start|>ROLE` and `<|channel|>NAME` are headers, `<|message|>` opens the body.
  ['<|start|>', { header: 'harmony' }],
  ['<|channel|>', { header: 'harmony' }],
  ['<|message|>', { message: true }],
  ['<|end|>', { to: 'answer' }],
  ['<|return|>', { drop: true }],
  ['<|call|>', { drop: true }],
  // gemma 4: `<|channel>NAME\n` opens a thought, `<channel|>` closes it.
  ['<|channel>', { header: 'gemma' }],
  ['<channel|>', { to: 'answer' }],
];

/** A header's name decides the body: harmony's `final` (or no channel) is the answer, any other channel thinking. */
function bodyKind(name: string): SegmentKind {
  const channel = /<\|channel\|>\s*(\S+)/.exec(name)?.[1] ?? (name.includes('<|channel|>') ? '' : 'final');
  return channel === '' || channel.startsWith('final') ? 'answer' : 'think';
}

export class ThinkSplitter {
  private mode: SegmentKind = 'answer';
  /** Inside a header: its text so far (markers included for harmony, to find the channel). */
  private header: { kind: 'harmony' | 'gemma'; text: string } | null = null;
  private pending = '';

  /** The segments `text` completes (adjacent ones of one kind merged). */
  push(text: string): Segment[] {
    this.pending += text;
    const out: Segment[] = [];
    for (;;) {
      const lt = this.pending.indexOf('<');
      if (lt < 0) {
        this.emit(out, this.pending);
        this.pending = '';
        return out;
      }
      this.emit(out, this.pending.slice(0, lt));
      this.pending = this.pending.slice(lt);
      const hit = MARKERS.find(([m]) => this.pending.startsWith(m));
      if (hit) {
        this.pending = this.pending.slice(hit[0].length);
        this.apply(hit[0], hit[1]);
        continue;
      }
      // A marker's beginning at the end: wait for the next piece.
      if (MARKERS.some(([m]) => m.startsWith(this.pending))) return out;
      this.emit(out, '<');
      this.pending = this.pending.slice(1);
    }
  }

  /** The end of the reply: whatever was held back is text. */
  flush(): Segment[] {
    const out: Segment[] = [];
    this.emit(out, this.pending);
    this.pending = '';
    return out;
  }

  private apply(marker: string, action: Action): void {
    if ('to' in action) {
      this.header = null;
      this.mode = action.to;
    } else if ('header' in action) {
      // `<|start|>assistant<|channel|>final`: the channel continues the same header.
      if (this.header?.kind === 'harmony' && action.header === 'harmony') this.header.text += marker;
      else this.header = { kind: action.header, text: marker };
    } else if ('message' in action) {
      this.mode = bodyKind(this.header?.text ?? '');
      this.header = null;
    }
  }

  private emit(out: Segment[], text: string): void {
    if (text === '') return;
    if (this.header) {
      if (this.header.kind === 'harmony') {
        this.header.text += text;
        return;
      }
      // gemma: the header is the channel name up to the end of its line.
      const nl = text.indexOf('\n');
      if (nl < 0) return;
      this.header = null;
      this.mode = 'think';
      text = text.slice(nl + 1);
      if (text === '') return;
    }
    const last = out[out.length - 1];
    if (last && last.kind === this.mode) last.text += text;
    else out.push({ kind: this.mode, text });
  }
}
