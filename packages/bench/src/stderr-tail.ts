// A child server's stderr, read as it comes: its last lines kept (for the one-line error when it
// fails) and `bmoe serve`'s "listening on URL" line found. Shared by the soak and the serve bench.

export interface StderrTail {
  /** Feed a chunk of the child's stderr (utf8). */
  feed(chunk: string): void;
  /** Adds a line of our own (a spawn failure). */
  note(line: string): void;
  /** The kept lines, the unfinished last one included. */
  lines(): string[];
  /** Resolves with the URL of the first `listening on URL` line. */
  readonly url: Promise<string>;
}

export function stderrTail(keep: number): StderrTail {
  const tail: string[] = [];
  let partial = '';
  let onUrl: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (onUrl = resolve));
  const push = (line: string): void => {
    tail.push(line);
    if (tail.length > keep) tail.shift();
  };
  return {
    feed(chunk) {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        push(line);
        const m = /listening on (http:\/\/\S+)/.exec(line);
        if (m?.[1]) onUrl(m[1]);
      }
    },
    note: push,
    lines: () => [...tail, ...(partial ? [partial] : [])],
    url,
  };
}
