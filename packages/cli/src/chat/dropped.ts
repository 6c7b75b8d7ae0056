// Paths a terminal types when a file is dropped on it, found in a chat line. Terminals paste the
// path as a shell word: GNOME Terminal and other VTE ones quote it ('/home/me/My Pictures/cat.png',
// a ' inside as '\''), macOS Terminal and iTerm2 escape it with backslashes
// (/Users/me/My\ Pictures/cat.png), others use double quotes or give a file:// URL. Pure: this
// finds the words that spell an absolute path or a file URL; attach.ts decides which name images.

export interface PathWord {
  /** The word's place in the line, quotes included: [start, end). */
  start: number;
  end: number;
  /** The path it spells: quotes and escapes removed, a file:// URL decoded. */
  path: string;
}

const SPACE = /\s/;
/** Punctuation that may follow a path typed in a sentence ("what is in /tmp/a.png?"). */
const TRAILING = /[?!.,;:)\]]+$/;

/**
 * One shell word of `line` from `start`: single quotes (literal), double quotes (\" \\ \$ \`
 * escaped), backslash escapes outside quotes; it ends at unescaped, unquoted whitespace. Null when
 * a quote is left open.
 */
export function shellWord(line: string, start: number): { value: string; end: number; quoted: boolean } | null {
  let value = '';
  let quoted = false;
  let i = start;
  while (i < line.length && !SPACE.test(line[i]!)) {
    const c = line[i]!;
    if (c === "'") {
      const close = line.indexOf("'", i + 1);
      if (close < 0) return null;
      value += line.slice(i + 1, close);
      quoted = true;
      i = close + 1;
    } else if (c === '"') {
      i++;
      quoted = true;
      for (;;) {
        if (i >= line.length) return null;
        const d = line[i]!;
        if (d === '"') break;
        if (d === '\\' && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) {
          value += line[i + 1];
          i += 2;
        } else {
          value += d;
          i++;
        }
      }
      i++;
    } else if (c === '\\' && i + 1 < line.length) {
      value += line[i + 1];
      i += 2;
    } else {
      value += c;
      i++;
    }
  }
  return { value, end: i, quoted };
}

/** `file:///a/b%20c.png` → `/a/b c.png`; a local absolute path as it is; anything else null. */
function asPath(word: string): string | null {
  if (word.startsWith('/')) return word;
  if (!/^file:\/\//i.test(word)) return null;
  try {
    const url = new URL(word);
    return url.host === '' || url.host === 'localhost' ? decodeURIComponent(url.pathname) : null;
  } catch {
    return null;
  }
}

/**
 * The words of `line` that spell an absolute path or a file URL, in order. An unquoted word ending
 * in punctuation is also given without it, right after (the caller takes the first that names a
 * file). Words are looked for at every whitespace boundary, so an apostrophe earlier in the line
 * ("don't") does not hide a path after it.
 */
export function pathWords(line: string): PathWord[] {
  const out: PathWord[] = [];
  let i = 0;
  while (i < line.length) {
    if (SPACE.test(line[i]!)) {
      i++;
      continue;
    }
    const word = /^['"]?(\/|file:\/\/)/i.test(line.slice(i, i + 8)) ? shellWord(line, i) : null;
    const path = word ? asPath(word.value) : null;
    if (word && path !== null) {
      out.push({ start: i, end: word.end, path });
      const tail = word.quoted ? null : TRAILING.exec(line.slice(i, word.end));
      if (tail) out.push({ start: i, end: word.end - tail[0].length, path: path.slice(0, -tail[0].length) });
    }
    // On to the next word as the text splits it (not the shell word's end: see above).
    while (i < line.length && !SPACE.test(line[i]!)) i++;
  }
  return out;
}

/** `line` without the spans given (in order, not overlapping), the text around each cut joined by one space. */
export function withoutSpans(line: string, spans: ReadonlyArray<{ start: number; end: number }>): string {
  const pieces: string[] = [];
  let at = 0;
  for (const s of spans) {
    pieces.push(line.slice(at, s.start));
    at = s.end;
  }
  pieces.push(line.slice(at));
  return pieces
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .join(' ');
}
