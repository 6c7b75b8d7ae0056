// The image bench's report: medians, the ratio to the resident row, a failed row said as such.
import { describe, expect, it } from 'vitest';
import { imageBenchReport, median, type ImageRow } from '../src/image-bench.js';

const row = (name: string, promptMs: number[], extra: Partial<ImageRow> = {}): ImageRow => ({
  name, args: [], limited: false, promptTokens: 300, promptMs, peakBytes: null, ...extra,
});

describe('image bench report', () => {
  it('reports each row\'s median prompt time and its ratio to the resident median', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    const md = imageBenchReport(
      { rows: [row('resident', [1000, 1200, 1100]), row('streamed, cache 0', [3300, 3000, 3600], { limited: true, peakBytes: 900 * 1024 * 1024 }), row('streamed, partial', [], { error: 'killed by the OOM killer' })], model: 'm', image: 'i', expertBytes: 2 ** 31 },
      { preset: 'qwen3.6-35b-a3b', layers: 4, width: 1024, height: 768, rounds: 3, threads: 2 },
    );
    expect(md).toContain('| resident | 300 | 1.100 | 1.00 | 1.000, 1.200, 1.100 |  |');
    expect(md).toContain('| streamed, cache 0 | 300 | 3.300 | 3.00 | 3.300, 3.000, 3.600 | 900 |');
    expect(md).toContain('| streamed, partial | | | | killed by the OOM killer | |');
    expect(md).toMatch(/experts 2\.00 GiB/);
  });
});
