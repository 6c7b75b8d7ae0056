// Stop strings: text is released as it is generated, except a tail that could still be the start
// of a stop string; when one completes, the text before it is released and generation stops. The
// stop string itself is never released (OpenAI's and llama-server's `stop`).

export class StopMatcher {
  private pending = '';
  private readonly stops: string[];

  /** Empty strings are ignored; no stop strings = everything is released at once. */
  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** Adds generated text; returns what may be released now and whether a stop string completed. */
  push(text: string): { text: string; stopped: boolean } {
    if (this.stops.length === 0) return { text, stopped: false };
    this.pending += text;
    let at = -1;
    for (const s of this.stops) {
      const i = this.pending.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) at = i;
    }
    if (at >= 0) {
      const out = this.pending.slice(0, at);
      this.pending = '';
      return { text: out, stopped: true };
    }
    const hold = this.heldBack();
    const out = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return { text: out, stopped: false };
  }

  /** The held-back tail, released at the end of a generation that did not stop on a stop string. */
  flush(): string {
    const out = this.pending;
    this.pending = '';
    return out;
  }

  /** Length of the longest tail of `pending` that is a proper prefix of a stop string. */
  private heldBack(): number {
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, this.pending.length); k > hold; k--) {
        if (this.pending.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    return hold;
  }
}
