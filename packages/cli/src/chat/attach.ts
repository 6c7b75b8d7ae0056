// The images the chat's next message carries: attached by `/image PATH`, or dropped into the line
// (a terminal types the dropped file's path: an absolute path or file URL naming an image file is
// taken out of the text and attached). Each is checked when it is attached (a file, within the
// size bound, an image format the engine reads) and read then, as a data: URL: the conversation
// holds the picture as it was, whatever becomes of the file, and resends it on later turns (the
// engine finds its cells in the KV cache by its pixels' hash). The message puts them first, then
// the text, as `bmoe run --image` and llama-mtmd-cli do.
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, resolve } from 'node:path';
import type { ChatMessage, ContentPart } from '@bmoe/engine';
import { checkImageFile, IMAGE_EXTENSIONS } from '../image-files.js';
import { pathWords, shellWord, withoutSpans } from './dropped.js';

export interface Attached {
  /** The path as attached (absolute). */
  path: string;
  /** The image as a `data:image/...;base64,` URL. */
  url: string;
  bytes: number;
}

/** Reads an image file for a message; throws a one-line Error starting with the path (image-files.ts). */
export async function readAttachment(path: string): Promise<Attached> {
  const file = await checkImageFile(path);
  const bytes = await readFile(path);
  return { path, url: `data:image/${file.format};base64,${bytes.toString('base64')}`, bytes: bytes.length };
}

/** A path as typed after /image: `~/` expanded, relative to the working directory. */
function typedPath(p: string): string {
  return resolve(p === '~' || p.startsWith('~/') ? homedir() + p.slice(1) : p);
}

/**
 * The paths of `/image ARG`: ARG itself when it names something (a typed path with spaces), else
 * its shell words (a dropped path is quoted or escaped; several may be given).
 */
export async function imageArgPaths(arg: string, exists: (path: string) => Promise<boolean>): Promise<string[]> {
  if (await exists(typedPath(arg))) return [typedPath(arg)];
  const words: string[] = [];
  for (let i = 0; i < arg.length; ) {
    if (/\s/.test(arg[i]!)) {
      i++;
      continue;
    }
    const w = shellWord(arg, i);
    if (!w) return [typedPath(arg)];
    words.push(w.value);
    i = w.end;
  }
  return words.map((w) => (/^file:\/\//i.test(w) ? (pathWords(w)[0]?.path ?? w) : w)).map(typedPath);
}

const isImageName = (p: string): boolean => IMAGE_EXTENSIONS.some((ext) => p.toLowerCase().endsWith(ext));

/**
 * The image files dropped into `line`: the words that spell an absolute path (or file URL) of an
 * existing file with an image extension, and the text without them. A word that names no such file
 * stays in the text.
 */
export async function droppedImages(line: string, exists: (path: string) => Promise<boolean>): Promise<{ text: string; paths: string[] }> {
  const taken: Array<{ start: number; end: number }> = [];
  const paths: string[] = [];
  for (const w of pathWords(line)) {
    const last = taken[taken.length - 1];
    if (last && w.start < last.end) continue;
    if (!isImageName(w.path) || !(await exists(w.path))) continue;
    taken.push(w);
    paths.push(w.path);
  }
  return { text: taken.length > 0 ? withoutSpans(line, taken) : line, paths };
}

/** The images waiting for the next message. */
export class Attachments {
  private pending: Attached[] = [];

  get list(): readonly Attached[] {
    return this.pending;
  }

  add(image: Attached): void {
    this.pending.push(image);
  }

  /** Drops them all; returns what was dropped. */
  clear(): Attached[] {
    const dropped = this.pending;
    this.pending = [];
    return dropped;
  }

  /** The next message: `text` alone, or the images waiting (now taken) and then the text. */
  message(text: string): string | ChatMessage {
    const images = this.clear();
    if (images.length === 0) return text;
    const parts: ContentPart[] = [...images.map((i): ContentPart => ({ type: 'image', image: i.url })), { type: 'text', text }];
    return { role: 'user', content: parts };
  }
}

/** `a.png, b.jpg (2 images)`: what is attached, by file name. */
export function attachedText(images: readonly Attached[]): string {
  const names = images.map((i) => basename(i.path)).join(', ');
  return images.length === 1 ? names : `${names} (${images.length} images)`;
}
