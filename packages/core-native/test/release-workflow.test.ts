// The release workflow uploads every CPU variant of each native target (cpu-variants.json): the
// platform packages list them all, and scripts/release.mjs refuses to publish a package with one
// missing. (It once uploaded bmoe.<target>.node alone.)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CPU_VARIANTS, variantFile } from '../binding/select.js';

const WORKFLOW = readFileSync(fileURLToPath(new URL('../../../.github/workflows/release.yml', import.meta.url)), 'utf8');

/** The upload-artifact paths of the workflow, as globs turned into regular expressions. */
function uploadPatterns(): RegExp[] {
  return [...WORKFLOW.matchAll(/path: '?packages\/core-native\/prebuilds\/([^',\s]+)'?/g)].map(
    (m) => new RegExp(`^${m[1]!.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`),
  );
}

describe('the release workflow', () => {
  it.each(Object.keys(CPU_VARIANTS))('uploads every CPU variant of %s', (target) => {
    const patterns = uploadPatterns();
    for (const v of CPU_VARIANTS[target]!) {
      const file = variantFile(target, v.variant);
      expect(patterns.some((p) => p.test(file)), `${file} is not uploaded`).toBe(true);
    }
  });
});
