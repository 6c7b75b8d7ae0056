// Before the suite: rebuild dist/ when a source file is newer (the setup.sh test installs the
// packed package, the bin tests run it), and make the tiny fixture models once into .models/
// (git-ignored). Dependencies (@bmoe/*) must be built: `npm run setup` at the repo root.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { buildIfStale } from '../../../tooling/test-utils.mjs';
import { FIXTURES, FIXTURE_DIR, PKG_DIR } from './fixtures.js';

export default async function setup(): Promise<void> {
  buildIfStale(PKG_DIR, 'bin.js');
  for (const preset of FIXTURES) {
    const out = join(FIXTURE_DIR, `${preset}.gguf`);
    if (!existsSync(out)) await makeModel({ preset, out });
  }
}
