// The CLI tests spawn the built executable (dist/bin.js), as a user would run it. `npm test`
// (turbo) builds every package before testing; when vitest is run directly, this rebuilds the
// CLI's dist if any source file is newer than it. Dependencies (@bmoe/engine, @bmoe/gguf) must be
// built already: `node scripts/pnpm.mjs exec turbo run build` at the repo root.
import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../../../tooling/test-utils.mjs';

export default function setup(): void {
  buildIfStale(fileURLToPath(new URL('..', import.meta.url)), 'bin.js');
}
