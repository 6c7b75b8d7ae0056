// Config sets: the spec's rows, cache sizes as a share of expert bytes resolved per model, and
// one-line errors for a bad config file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeModel, planModel } from '@bmoe/gguf';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfigSet, parseConfigSet, resolveFlags, rowStem, SPEC_QWEN_EXPERT_BYTES, specCachePercent } from '../src/configs.js';

const MiB = 1024 * 1024;

describe('config sets', () => {
  it("spec: the spec's eight rows in its order, one fixed flag string each (repack off, as the peer), plus the llama.cpp peer", () => {
    const rows = loadConfigSet('spec-mib');
    expect(rows.map((r) => r.flags)).toEqual([
      '--no-repack',
      '--moe-stream --no-overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 2000 --io-threads 2 --no-overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 2000 --io-threads 4 --no-overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 4000 --io-threads 2 --no-overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 4000 --io-threads 4 --no-overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 0 --io-threads 4 --overlap --no-route-ahead --no-repack',
      '--moe-stream --cache-mb 4000 --io-threads 4 --overlap --no-route-ahead --no-repack',
      '-nr',
    ]);
    expect(rows.at(-1)?.tool).toBe('llama-completion');
    const pct = loadConfigSet('spec');
    expect(pct[2]?.flags).toBe(`--moe-stream --cache-mb ${specCachePercent(2000)}% --io-threads 2 --no-overlap --no-route-ahead --no-repack`);
    // bmoe repacks by default: every bmoe row of every built-in set says --no-repack, as the peer's -nr.
    for (const set of ['spec', 'spec-mib', 'smoke']) {
      for (const r of loadConfigSet(set).filter((x) => x.tool === 'bmoe')) expect(r.flags.split(' '), `${set} ${r.id}`).toContain('--no-repack');
    }
  });

  it("the spec's expert bytes match the plan of the qwen3-30b-a3b preset at Q4_K_M (within 0.5 %)", () => {
    const plan = planModel({ preset: 'qwen3-30b-a3b' });
    const expertBytes = describeModel(plan.layout).expertBytes;
    expect(Math.abs(expertBytes - SPEC_QWEN_EXPERT_BYTES) / expertBytes).toBeLessThan(0.005);
  });

  it('resolves a share of expert bytes to whole MiB for each model, leaving MiB and other flags alone', () => {
    expect(resolveFlags('--moe-stream --cache-mb 12.5% --io-threads 2', 1000 * MiB, 'x')).toEqual(['--moe-stream', '--cache-mb', '125', '--io-threads', '2']);
    expect(resolveFlags('--moe-stream --cache-mb 2000', 1000 * MiB, 'x')).toEqual(['--moe-stream', '--cache-mb', '2000']);
    expect(resolveFlags('--moe-stream --cache-mb 0%', 1000 * MiB, 'x')).toEqual(['--moe-stream', '--cache-mb', '0']);
    expect(resolveFlags('--moe-stream --cache-mb 0.01%', 10 * MiB, 'x')).toEqual(['--moe-stream', '--cache-mb', '1']);
    expect(() => resolveFlags('--cache-mb abc%', MiB, 'config z')).toThrow(/config z: --cache-mb abc%/);
  });

  it('reads a JSON config set and says what is wrong with a bad one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bmoe-configs-'));
    const file = join(dir, 'set.json');
    writeFileSync(file, JSON.stringify([{ id: 'a', flags: '--moe-stream' }, { id: 'b', label: 'B', flags: ' --moe-stream --overlap ' }]));
    expect(loadConfigSet(file)).toEqual([
      { id: 'a', label: 'a', flags: '--moe-stream', tool: 'bmoe' },
      { id: 'b', label: 'B', flags: '--moe-stream --overlap', tool: 'bmoe' },
    ]);
    expect(() => parseConfigSet('[{"id":"a","flags":""},{"id":"a","flags":""}]', 'f.json')).toThrow('f.json: config id "a" appears twice');
    expect(() => parseConfigSet('[{"id":"a b","flags":""}]', 'f.json')).toThrow(/f\.json: \[0\.id\]/);
    expect(() => parseConfigSet('[{"id":"a","flags":"--prompt \\"x y\\""}]', 'f.json')).toThrow(ConfigError);
    expect(() => parseConfigSet('{', 'f.json')).toThrow(/f\.json: not JSON/);
    expect(() => loadConfigSet(join(dir, 'missing.json'))).toThrow(/not a built-in set \(spec, spec-mib, smoke\) and not a readable file \(ENOENT\)/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('names row files <model>__<config>', () => {
    expect(rowStem('/a/b/Qwen3-30B-A3B-Q4_K_M.gguf', 'c2000-l2')).toBe('Qwen3-30B-A3B-Q4_K_M__c2000-l2');
  });
});
