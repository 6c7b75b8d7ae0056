// `bmoe make-image --out FILE --width W --height H [--seed S]`: a deterministic test picture
// (gradient and blocks) for image input, PNG or JPEG by the file's extension, so tests and demos
// of multimodal models never need to download one.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { usageError, type CliContext } from '../context.js';
import { formatBytes, table } from '../format.js';
import { intRange, uint32 } from '../parse.js';

interface ImageFlags {
  out?: string;
  width?: number;
  height?: number;
  seed?: number;
}

/** makeTestImage's bound on either side. */
const MAX_SIDE = 8192;

export function registerMakeImage(program: Command, ctx: CliContext): void {
  program
    .command('make-image')
    .description('write a deterministic test image (gradient and blocks) for multimodal models; PNG or JPEG by the extension')
    .option('--out <file>', 'output image path: .png, .jpg or .jpeg')
    .option('--width <W>', `width in pixels (1..${MAX_SIDE})`, intRange(1, MAX_SIDE))
    .option('--height <H>', `height in pixels (1..${MAX_SIDE})`, intRange(1, MAX_SIDE))
    .option('--seed <S>', 'pattern seed (default 1)', uint32)
    .action(async function (this: Command, flags: ImageFlags) {
      if (!flags.out || flags.width === undefined || flags.height === undefined) {
        usageError(this, 'make-image needs --out, --width and --height');
      }
      const { imageFormatFromPath, makeTestImage } = await import('@bmoe/gguf');
      const format = imageFormatFromPath(flags.out);
      if (!format) usageError(this, `--out ${flags.out}: the format follows the extension, which must be .png, .jpg or .jpeg`);
      const bytes = makeTestImage({ width: flags.width, height: flags.height, seed: flags.seed, format });
      await mkdir(dirname(flags.out), { recursive: true });
      await writeFile(flags.out, bytes);
      process.stdout.write(table([
        ['path', flags.out],
        ['image', `${flags.width}x${flags.height} ${format}`],
        ['size', `${formatBytes(bytes.length)} (${bytes.length} bytes)`],
        ['sha256', createHash('sha256').update(bytes).digest('hex')],
      ]));
      ctx.exitCode = 0;
    });
}
