// The images of `bmoe chat` without a model: paths as terminals paste a dropped file (quoted,
// backslash-escaped, double-quoted, a file URL) found in a line and taken out of its text, `/image`
// arguments, the image check of `run --image` and `/image` (the format known by its first bytes),
// and the message the attachments make (images first, then the text).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestImage } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachedText, Attachments, droppedImages, imageArgPaths, readAttachment } from '../src/chat/attach.js';
import { pathWords, shellWord, withoutSpans } from '../src/chat/dropped.js';
import { checkImageFile, imageFormat, MAX_IMAGE_BYTES } from '../src/image-files.js';

let dir: string;
const png = makeTestImage({ width: 8, height: 6, format: 'png', seed: 1 });
const jpeg = makeTestImage({ width: 8, height: 6, format: 'jpeg', seed: 2 });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-attach-'));
  await writeFile(join(dir, 'a.png'), png);
  await writeFile(join(dir, 'my pic.jpg'), jpeg);
  await writeFile(join(dir, "it's.png"), png);
  await writeFile(join(dir, 'notes.txt'), 'hello\n');
  await writeFile(join(dir, 'fake.png'), 'not a png\n');
  await writeFile(join(dir, 'empty.png'), '');
  await writeFile(join(dir, 'w.webp'), Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 '), Buffer.alloc(16)]));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The paths of a line's path words, as the caller sees them. */
const found = (line: string): string[] => pathWords(line).map((w) => w.path);
const exists = (names: string[]) => async (p: string) => names.includes(p);

describe('paths dropped on a terminal', () => {
  it('reads the ways terminals paste a path: quoted, escaped, double-quoted, a file URL', () => {
    expect(found("'/home/me/My Pictures/cat.png' ")).toEqual(['/home/me/My Pictures/cat.png']);
    expect(found("'/home/me/it'\\''s.png'")).toEqual(["/home/me/it's.png"]);
    expect(found('/Users/me/My\\ Pictures/cat\\(1\\).png')).toEqual(['/Users/me/My Pictures/cat(1).png']);
    expect(found('"C/x" "/srv/a \\"b\\".png"')).toEqual(['/srv/a "b".png']);
    expect(found('file:///home/me/My%20Pictures/cat.png')).toEqual(['/home/me/My Pictures/cat.png']);
    expect(found('file://otherhost/x.png and ~/a.png and rel/a.png')).toEqual([]);
  });

  it('finds paths anywhere in a sentence, also after an apostrophe, and without punctuation that follows', () => {
    expect(found("don't guess: what is /tmp/a.png?")).toEqual(['/tmp/a.png?', '/tmp/a.png']);
    expect(found("what's in '/tmp/a b.png' and /tmp/c.jpg")).toEqual(['/tmp/a b.png', '/tmp/c.jpg']);
    expect(found("an open quote '/tmp/a.png")).toEqual([]);
  });

  it('takes out the words that name image files, the text around them joined', async () => {
    const files = ['/tmp/a.png', '/tmp/a b.png', '/etc/hostname'];
    expect(await droppedImages("what is '/tmp/a b.png' here?", exists(files))).toEqual({ text: 'what is here?', paths: ['/tmp/a b.png'] });
    expect(await droppedImages('/tmp/a.png, describe it', exists(files))).toEqual({ text: ', describe it', paths: ['/tmp/a.png'] });
    expect(await droppedImages('and /tmp/a.png?', exists(files))).toEqual({ text: 'and ?', paths: ['/tmp/a.png'] });
    expect(await droppedImages('/tmp/a.png', exists(files))).toEqual({ text: '', paths: ['/tmp/a.png'] });
    // Not an image's name, or no such file: the text stays as it is.
    expect(await droppedImages('cat /etc/hostname please', exists(files))).toEqual({ text: 'cat /etc/hostname please', paths: [] });
    expect(await droppedImages('is /tmp/gone.png there?', exists(files))).toEqual({ text: 'is /tmp/gone.png there?', paths: [] });
    expect(withoutSpans('a  X  b Y', [{ start: 3, end: 4 }, { start: 8, end: 9 }])).toBe('a b');
  });

  it('shellWord stops at unquoted whitespace and refuses an open quote', () => {
    expect(shellWord("'/a b'c d", 0)).toEqual({ value: '/a bc', end: 7, quoted: true });
    expect(shellWord('"/a', 0)).toBeNull();
  });
});

describe('/image arguments', () => {
  it('a typed path with spaces as it is; else its shell words; ~ and relative paths resolved', async () => {
    const spaced = join(dir, 'my pic.jpg');
    const isFile = async (p: string): Promise<boolean> => p === spaced;
    expect(await imageArgPaths(spaced, isFile)).toEqual([spaced]);
    expect(await imageArgPaths(`'${spaced}' /x/b.png`, isFile)).toEqual([spaced, '/x/b.png']);
    expect(await imageArgPaths(spaced.replace(' ', '\\ '), async () => false)).toEqual([spaced]);
    expect(await imageArgPaths('~/a.png', async () => false)).toEqual([join(process.env.HOME ?? '', 'a.png')]);
    expect(await imageArgPaths('a.png', async () => false)).toEqual([join(process.cwd(), 'a.png')]);
    expect(await imageArgPaths('file:///x/my%20b.png', async () => false)).toEqual(['/x/my b.png']);
  });
});

describe('image files', () => {
  it('knows the formats by their first bytes', () => {
    expect(imageFormat(png)).toBe('png');
    expect(imageFormat(jpeg)).toBe('jpeg');
    expect(imageFormat(Buffer.from('GIF89a....'))).toBe('gif');
    expect(imageFormat(Buffer.from('BM......'))).toBe('bmp');
    expect(imageFormat(Buffer.from('P6\n8 6\n255\n'))).toBe('pnm');
    expect(imageFormat(Buffer.from('hello'))).toBeNull();
  });

  it('refuses in one line naming the file: missing, a folder, empty, text, WebP, over the bound', async () => {
    const refusal = (name: string): Promise<string> => checkImageFile(join(dir, name)).then(() => 'taken', (e: Error) => e.message);
    expect(await checkImageFile(join(dir, 'a.png'))).toEqual({ path: join(dir, 'a.png'), format: 'png', bytes: png.length });
    expect(await refusal('missing.png')).toBe(`${join(dir, 'missing.png')}: no such file`);
    expect(await refusal('')).toBe(`${join(dir, '')}: not a file`);
    expect(await refusal('empty.png')).toBe(`${join(dir, 'empty.png')}: an empty file`);
    expect(await refusal('notes.txt')).toBe(`${join(dir, 'notes.txt')}: not an image (PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR)`);
    expect(await refusal('fake.png')).toMatch(/fake\.png: not an image \(/);
    expect(await refusal('w.webp')).toBe(`${join(dir, 'w.webp')}: a WebP image, which this build does not read (it reads PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR)`);
    const big = join(dir, 'big.png');
    await writeFile(big, png);
    const { truncate } = await import('node:fs/promises');
    await truncate(big, MAX_IMAGE_BYTES + 1);
    expect(await refusal('big.png')).toBe(`${big}: ${MAX_IMAGE_BYTES + 1} bytes, over the limit of ${MAX_IMAGE_BYTES} for an image`);
  });
});

describe('attachments', () => {
  it('are read as data URLs and go first in the next message, then the text; after that none wait', async () => {
    const a = await readAttachment(join(dir, 'a.png'));
    const b = await readAttachment(join(dir, 'my pic.jpg'));
    expect(a.url).toBe(`data:image/png;base64,${Buffer.from(png).toString('base64')}`);
    expect(b.url.startsWith('data:image/jpeg;base64,')).toBe(true);
    const at = new Attachments();
    expect(at.message('hi')).toBe('hi');
    at.add(a);
    at.add(b);
    expect(attachedText(at.list)).toBe('a.png, my pic.jpg (2 images)');
    expect(at.message('compare')).toEqual({
      role: 'user',
      content: [{ type: 'image', image: a.url }, { type: 'image', image: b.url }, { type: 'text', text: 'compare' }],
    });
    expect(at.list).toEqual([]);
    at.add(a);
    expect(at.clear()).toEqual([a]);
    expect(at.message('again')).toBe('again');
  });
});
