#!/usr/bin/env node
// Install proof from a real registry: starts Verdaccio on loopback with a throwaway storage,
// publishes every package (scripts/release.mjs: `pnpm pack` tarballs, dependency order), then in an
// empty folder whose PATH holds only node/npm/npx (no cc, c++, gcc, g++, clang, cmake, make):
//   npm install @bmoe/engine @bmoe/cli     -> the prebuilt @bmoe/core-native-linux-x64-gnu is used
//   npx @bmoe/cli info <tiny fixture>
//   npx @bmoe/cli run  <tiny fixture>      -> the same greedy tokens as this checkout's build
//   BMOE_FORCE_WASM=1 ... run               -> the same tokens again through wasm32-wasi
// then in another folder without the platform package (npm --omit=optional): the wasm fallback
// refuses what needs streaming in one line, `bmoe native build` builds the addon for this CPU,
// and the local build streams the same tokens.
//
// Needs: `npm test`'s build (dist/, build-pool/) and the prebuilt
// (node packages/core-native/scripts/build-target.mjs linux-x64-gnu). Run by .ci/run.
// Verdaccio proxies third-party packages (zod, commander, ...) from the configured npm registry;
// @bmoe/* are served only from what this run published.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { packAll, publishAll } from './release.mjs';
// The loader's own choice of CPU variant (built into packages/core-native/dist by npm test).
import { CPU_VARIANTS, selectVariant, variantFile } from '../packages/core-native/dist/index.js';
// The bench's memory cgroup (v1 or v2), for the wasm fallback's refusal under a memory limit.
import { createMemoryCgroup, removeCgroup } from '../packages/bench/dist/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const cli = join(root, 'packages', 'cli', 'dist', 'bin.js');
const PROMPT = 'Once upon a time the mother looked at the birds';
const N = 24;
const TOOLS = ['cc', 'c++', 'gcc', 'g++', 'clang', 'clang++', 'cmake', 'make', 'ninja'];

const results = [];
function check(name, ok, detail = '') {
  results.push({ name, ok });
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
}

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

async function waitFor(url, ms) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > until) throw new Error(`${url}: no answer within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 600_000, ...opts });
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`);
  return r;
}

function mustRun(cmd, args, opts = {}) {
  const r = run(cmd, args, opts);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status ?? r.signal}\n${r.stderr?.slice(-2000)}`);
  return r;
}

/** Token ids and text of a `bmoe run --json` output. */
function tokensOf(stdout) {
  const events = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type === 'token');
  return { ids: events.map((e) => e.token), text: events.map((e) => e.text).join('') };
}

/** 1. Verdaccio on loopback, its own storage and users; resolves to its URL and an npm env publishing to it. */
async function startRegistry(tmp, onSpawn) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const upstream = run('npm', ['config', 'get', 'registry']).stdout.trim() || 'https://registry.npmjs.org/';
  writeFileSync(join(tmp, 'config.yaml'), [
    `storage: ${join(tmp, 'storage')}`,
    'auth:', '  htpasswd:', `    file: ${join(tmp, 'htpasswd')}`, '    max_users: 10',
    'uplinks:', '  npmjs:', `    url: ${upstream}`, '    timeout: 60s',
    'packages:',
    "  '@bmoe/*':", '    access: $all', '    publish: $authenticated',
    "  '**':", '    access: $all', '    publish: $authenticated', '    proxy: npmjs',
    // A platform package holds one addon per CPU variant (about 11 MiB each): over Verdaccio's
    // default 10mb body limit, as a real registry would take it.
    'max_body_size: 200mb',
    'log: { type: stdout, format: pretty, level: warn }',
    '',
  ].join('\n'));
  const bin = join(dirname(require.resolve('verdaccio/package.json')), 'bin', 'verdaccio');
  const verdaccio = spawn(process.execPath, [bin, '--config', join(tmp, 'config.yaml'), '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onSpawn(verdaccio);
  let vlog = '';
  verdaccio.stdout.on('data', (d) => (vlog += d));
  verdaccio.stderr.on('data', (d) => (vlog += d));
  await waitFor(`${url}-/ping`, 60_000).catch((e) => {
    throw new Error(`${e.message}\n${vlog}`);
  });
  const user = await fetch(`${url}-/user/org.couchdb.user:bmoe`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bmoe', password: 'bmoe-registry-test', email: 'ci@localhost' }),
  });
  const { token } = await user.json();
  if (!token) throw new Error(`verdaccio gave no token (HTTP ${user.status})`);
  const npmrc = join(tmp, 'npmrc');
  writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  const npmEnv = {
    ...process.env,
    NPM_CONFIG_USERCONFIG: npmrc,
    npm_config_registry: url,
    npm_config_cache: join(tmp, 'npm-cache'),
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  check('verdaccio up on loopback', true, url);
  return { url, npmEnv };
}

/** 2. Pack (pnpm pack rewrites workspace:*) and publish in dependency order; whether the wasm package was among them. */
function publishPackages(tmp, url, npmEnv) {
  const packed = packAll({ outDir: join(tmp, 'tarballs'), allowMissing: true, log: (m) => console.log(m) });
  publishAll(packed, { registry: url, env: npmEnv, log: (m) => console.log(m) });
  const names = packed.map((p) => p.pkg.name);
  check('published every package', ['@bmoe/gguf', '@bmoe/core-native', '@bmoe/core-native-linux-x64-gnu', '@bmoe/engine', '@bmoe/cli'].every((n) => names.includes(n)), names.join(', '));
  return { wasmPublished: names.includes('@bmoe/core-native-wasm32-wasi') };
}

/** 3. The fixture and the reference tokens from this checkout's build. */
function reference(tmp) {
  const model = join(tmp, 'tiny.gguf');
  mustRun(process.execPath, [cli, 'make-model', '--preset', 'tiny-qwen3moe', '--out', model]);
  const runArgs = ['run', model, '-p', PROMPT, '-n', String(N), '-t', '2', '--json'];
  const expected = tokensOf(mustRun(process.execPath, [cli, ...runArgs]).stdout);
  const expectedInfo = mustRun(process.execPath, [cli, 'info', model]).stdout;
  // A vision model: tiny-gemma4 with its projector beside it, and a generated photo.
  const visionDir = join(tmp, 'vision');
  const vision = join(visionDir, 'model.gguf');
  mustRun(process.execPath, [cli, 'make-model', '--preset', 'tiny-gemma4', '--out', vision, '--mmproj', join(visionDir, 'mmproj-F16.gguf')]);
  const image = join(tmp, 'photo.jpg');
  mustRun(process.execPath, [cli, 'make-image', '--out', image, '--width', '96', '--height', '64']);
  const imageArgs = ['run', vision, '--image', image, '-p', 'What is in this picture?', '-n', '8', '-t', '2', '--json'];
  const expectedImage = tokensOf(mustRun(process.execPath, [cli, ...imageArgs]).stdout);
  return { model, runArgs, expected, expectedInfo, imageArgs, expectedImage };
}

/** 4a. An empty folder, PATH with node, npm and npx only. */
function bareSite(tmp, npmEnv, name = 'app') {
  const binDir = join(tmp, `${name}-bin`);
  mkdirSync(binDir);
  const npmCli = dirname(realpathSync(mustRun('/bin/sh', ['-c', 'command -v npm']).stdout.trim()));
  symlinkSync(process.execPath, join(binDir, 'node'));
  symlinkSync(join(npmCli, 'npm-cli.js'), join(binDir, 'npm'));
  symlinkSync(join(npmCli, 'npx-cli.js'), join(binDir, 'npx'));
  // npx runs the bin through a shell: name it by path, so PATH stays node/npm/npx only.
  const env = { ...npmEnv, PATH: binDir, npm_config_script_shell: '/bin/sh' };
  delete env.BMOE_NATIVE_PATH;
  delete env.BMOE_FORCE_WASM;
  delete env.BMOE_LLAMA_BIN_DIR;
  const found = TOOLS.filter((t) => run('/bin/sh', ['-c', `command -v ${t}`], { env }).status === 0);
  check('no compiler or build tool on PATH', found.length === 0, found.length ? `found ${found.join(', ')}` : `PATH=${binDir}`);
  const app = join(tmp, name);
  mkdirSync(app);
  return {
    app,
    env,
    binDir,
    /** Runs a tool of the bare PATH (node, npm, npx) in the app folder, with `extraEnv` on top. */
    tool: (name, args, extraEnv = {}) => run(join(binDir, name), args, { cwd: app, env: { ...env, ...extraEnv } }),
  };
}

/** 4b. npm install from the local registry, prebuilt and nothing compiled; false when the install failed. */
function installFromRegistry(site, url) {
  const install = site.tool('npm', ['install', '@bmoe/engine', '@bmoe/cli', '--no-audit', '--no-fund', '--loglevel', 'error']);
  check('npm install @bmoe/engine @bmoe/cli from the local registry', install.status === 0, install.status === 0 ? '' : install.stderr.slice(-2000));
  if (install.status !== 0) return false;
  const nm = join(site.app, 'node_modules', '@bmoe');
  check('the linux-x64-gnu platform package was installed with its binary', existsSync(join(nm, 'core-native-linux-x64-gnu', 'bmoe.linux-x64-gnu.node')));
  check('nothing was compiled at install (no build folder)', !existsSync(join(nm, 'core-native', 'build')));
  const lock = JSON.parse(readFileSync(join(site.app, 'package-lock.json'), 'utf8'));
  const resolvedFrom = Object.entries(lock.packages).filter(([k]) => k.includes('@bmoe/')).map(([, v]) => v.resolved ?? '');
  check('every @bmoe package came from the local registry', resolvedFrom.length >= 5 && resolvedFrom.every((r) => r.startsWith(url)), `${resolvedFrom.length} packages`);
  return true;
}

/** 4c. The installed CLI on the prebuilt: the loader's pick, `info`, and the same greedy tokens. */
function checkPrebuilt(site, ref) {
  const source = site.tool('node', ['--input-type=module', '-e', "const m = await import('@bmoe/core-native'); console.log(JSON.stringify(m.bindingSource()))"]);
  const src = source.status === 0 ? JSON.parse(source.stdout) : { candidate: source.stderr.trim() };
  check('the loader picked the prebuilt @bmoe/core-native-linux-x64-gnu', src.candidate === '@bmoe/core-native-linux-x64-gnu' && src.wasm === false, src.candidate);

  // The CPU variant: the best one this CPU has (the checkout's own choice function, on this
  // machine's /proc/cpuinfo), every variant's file installed, and the addon built as that variant.
  const variants = CPU_VARIANTS['linux-x64-gnu'] ?? [];
  const want = selectVariant('linux-x64-gnu', readFileSync('/proc/cpuinfo', 'utf8'), {});
  const pkgDir = join(site.app, 'node_modules', '@bmoe', 'core-native-linux-x64-gnu');
  const missingFiles = variants.map((v) => variantFile('linux-x64-gnu', v.variant)).filter((f) => !existsSync(join(pkgDir, f)));
  check('the platform package holds every CPU variant', missingFiles.length === 0, missingFiles.length ? `missing ${missingFiles.join(', ')}` : variants.map((v) => v.variant).join(', '));
  const built = site.tool('node', ['--input-type=module', '-e', "const m = await import('@bmoe/engine'); const b = await m.nativeBuild(); console.log(JSON.stringify({ variant: b.variant }))"]);
  const bv = built.status === 0 ? JSON.parse(built.stdout).variant : built.stderr.trim().slice(-300);
  check(`the loader picked this CPU's best variant (${want.variant ?? 'none'}) and the addon says it is that variant`,
    src.variant === want.variant?.variant && bv === `linux-x64-gnu.${want.variant?.variant}`, `bindingSource ${src.variant}, buildInfo ${bv}`);
  const cpu = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'))?.split(/\s+/) ?? [];
  for (const v of variants.filter((x) => x.variant !== want.variant?.variant && x.features.every((f) => cpu.includes(f)))) {
    const forced = site.tool('npx', ['--no-install', '@bmoe/cli', ...ref.runArgs], { BMOE_CPU_VARIANT: v.variant });
    const t = forced.status === 0 ? tokensOf(forced.stdout) : { ids: [], text: forced.stderr.slice(-500) };
    const diff = t.ids.findIndex((id, i) => id !== ref.expected.ids[i]);
    // Other SIMD widths round differently: the tokens are reported against the checkout's, the run must complete.
    check(`BMOE_CPU_VARIANT=${v.variant} npx @bmoe/cli run completes on that variant`, t.ids.length === N, t.ids.length === N ? (diff < 0 ? 'same tokens' : `first different token at ${diff} (SIMD rounding)`) : t.text);
  }
  const bogus = site.tool('npx', ['--no-install', '@bmoe/cli', ...ref.runArgs], { BMOE_CPU_VARIANT: 'bogus' });
  const bogusLine = bogus.stderr.trim().split('\n').filter(Boolean);
  check('BMOE_CPU_VARIANT=bogus: exit 1, one line naming the variants', bogus.status !== 0 && /bogus/.test(bogus.stderr) && variants.every((v) => bogus.stderr.includes(v.variant)), bogusLine.slice(-1)[0] ?? '');

  const st = site.tool('npx', ['--no-install', '@bmoe/cli', 'native', 'status', '--json']);
  let status = { loaded: null };
  try {
    status = JSON.parse(st.stdout);
  } catch {
    status.error = st.stderr.slice(-500);
  }
  check('bmoe native status: the prebuilt platform package, its CPU variant, streaming',
    status.loaded?.kind === 'prebuilt' && status.loaded.variant === `linux-x64-gnu.${want.variant?.variant}` && status.streaming === true, JSON.stringify(status.loaded ?? status.error));

  const info = site.tool('npx', ['--no-install', '@bmoe/cli', 'info', ref.model]);
  check('npx @bmoe/cli info', info.status === 0 && info.stdout === ref.expectedInfo, info.status === 0 ? '' : info.stderr.slice(-1000));

  const t0 = performance.now();
  const got = site.tool('npx', ['--no-install', '@bmoe/cli', ...ref.runArgs]);
  const ms = performance.now() - t0;
  const tokens = got.status === 0 ? tokensOf(got.stdout) : { ids: [], text: got.stderr.slice(-1000) };
  check(`npx @bmoe/cli run: the same ${N} greedy tokens as this checkout's build`, tokens.ids.length === N && JSON.stringify(tokens.ids) === JSON.stringify(ref.expected.ids), `${JSON.stringify(tokens.text.slice(0, 60))} (${ms.toFixed(0)} ms)`);

  // The prebuilt carries llama.cpp's multimodal library: an image answered as the checkout answers it.
  const img = site.tool('npx', ['--no-install', '@bmoe/cli', ...ref.imageArgs]);
  const imgTokens = img.status === 0 ? tokensOf(img.stdout) : { ids: [], text: img.stderr.slice(-1000) };
  check('npx @bmoe/cli run --image (a projector beside the model): the checkout\'s greedy tokens',
    imgTokens.ids.length > 0 && JSON.stringify(imgTokens.ids) === JSON.stringify(ref.expectedImage.ids), JSON.stringify(imgTokens.text.slice(0, 60)));
}

/** 5. The wasm32-wasi build, forced (installed explicitly: npm skips it on x64, cpu is wasm32). */
function checkWasm(tmp, site, ref) {
  const w = site.tool('npm', ['install', '--no-save', '--force', '@bmoe/core-native-wasm32-wasi', '--no-audit', '--no-fund', '--loglevel', 'error']);
  check('npm install @bmoe/core-native-wasm32-wasi', w.status === 0, w.status === 0 ? '' : w.stderr.slice(-1000));
  // The wasm build rounds like the arm64 build (both equal arm64 llama-completion), and on the
  // tiny qwen3moe and gemma4 fixtures, whose successors are near-tied by design, x64's AVX2 kernels
  // flip a late token; on tiny-gpt-oss all three agree, so that is where identity is asserted.
  const oss = join(tmp, 'tiny-gpt-oss.gguf');
  mustRun(process.execPath, [cli, 'make-model', '--preset', 'tiny-gpt-oss', '--out', oss]);
  const ossArgs = ['run', oss, '-p', PROMPT, '-n', String(N), '-t', '1', '--json'];
  const nr = site.tool('npx', ['--no-install', '@bmoe/cli', ...ossArgs]);
  const t1 = performance.now();
  const wr = site.tool('npx', ['--no-install', '@bmoe/cli', ...ossArgs], { BMOE_FORCE_WASM: '1' });
  const wms = performance.now() - t1;
  const want = nr.status === 0 ? tokensOf(nr.stdout) : { ids: ['native run failed'], text: nr.stderr.slice(-500) };
  const wt = wr.status === 0 ? tokensOf(wr.stdout) : { ids: [], text: wr.stderr.slice(-1000) };
  check('BMOE_FORCE_WASM=1 npx @bmoe/cli run: the same tokens through wasm32-wasi as the linux-x64 prebuilt (tiny-gpt-oss)',
    wt.ids.length === N && JSON.stringify(wt.ids) === JSON.stringify(want.ids), `${JSON.stringify(wt.text.slice(0, 60))} (${wms.toFixed(0)} ms)`);
  const wq = site.tool('npx', ['--no-install', '@bmoe/cli', ...ref.runArgs], { BMOE_FORCE_WASM: '1' });
  const q = wq.status === 0 ? tokensOf(wq.stdout).ids : [];
  const firstDiff = q.findIndex((id, i) => id !== ref.expected.ids[i]);
  check('BMOE_FORCE_WASM=1 runs tiny-qwen3moe too', q.length === N,
    firstDiff < 0 ? 'same tokens as x64' : `x64 differs from token ${firstDiff} (SIMD rounding; wasm equals the arm64 build there)`);
}

/**
 * 6. No platform package (as on a phone whose prebuilt did not install): the wasm32-wasi fallback
 * refuses what needs streaming in one line naming `bmoe native build`; `bmoe native build` builds
 * the addon from the installed package's sources and the pinned llama.cpp (from npm) for this
 * CPU; then the status says "local" and a streamed run gives the checkout's greedy tokens.
 * BMOE_CACHE_DIR is fixed (~/.cache/bmoe-registry-test), so a rerun on this machine is warm.
 */
function checkLocalBuild(tmp, npmEnv, ref) {
  const site = bareSite(tmp, { ...npmEnv, npm_config_omit: 'optional' }, 'phone');
  const cacheDir = join(homedir(), '.cache', 'bmoe-registry-test');
  const env = { BMOE_CACHE_DIR: cacheDir };
  const bmoe = (args, extra = {}) => site.tool('npx', ['--no-install', '@bmoe/cli', ...args], { ...env, ...extra });
  // A machine without a local build yet; the source, the build folder and ccache of an earlier run
  // stay (another install path of the same version: the case a reinstall meets).
  rmSync(join(cacheDir, 'native', JSON.parse(readFileSync(join(root, 'packages', 'core-native', 'package.json'), 'utf8')).version, 'bmoe.node'), { force: true });
  const install = site.tool('npm', ['install', '@bmoe/engine', '@bmoe/cli', '--no-audit', '--no-fund', '--loglevel', 'error']);
  const w = site.tool('npm', ['install', '--no-save', '--force', '@bmoe/core-native-wasm32-wasi', '--no-audit', '--no-fund', '--loglevel', 'error']);
  const nm = join(site.app, 'node_modules', '@bmoe');
  check('without the platform package: npm install @bmoe/engine @bmoe/cli --omit=optional, then the wasm32-wasi package',
    install.status === 0 && w.status === 0 && !existsSync(join(nm, 'core-native-linux-x64-gnu')), (install.stderr + w.stderr).slice(-1000));
  const status = (extra = {}) => {
    const r = bmoe(['native', 'status', '--json'], extra);
    try {
      return JSON.parse(r.stdout);
    } catch {
      return { loaded: null, error: r.stderr.slice(-500) };
    }
  };
  const before = status();
  check('bmoe native status: the wasm32-wasi fallback, no streaming, and why the prebuilt did not load',
    before.loaded?.kind === 'wasm' && before.streaming === false && before.failed?.some((f) => f.candidate === '@bmoe/core-native-linux-x64-gnu' && f.reason === 'not installed'),
    JSON.stringify(before.loaded ?? before.error));
  const oneLine = (r) => r.stderr.trim().split('\n').filter((l) => !/^\(node:\d+\)|^\(Use `node/.test(l));
  // The settings line (what was asked), then the refusal: one error line.
  const refusal = (r) => {
    const lines = oneLine(r);
    const errors = lines.filter((l) => l.startsWith('bmoe: error:'));
    return { ok: r.status === 1 && errors.length === 1 && errors[0].includes('`bmoe native build`') && lines.at(-1) === errors[0], text: lines.join(' | ') };
  };
  const asked = refusal(bmoe([...ref.runArgs, '--moe-stream']));
  check('wasm only, --moe-stream: exit 1, one error line naming bmoe native build', asked.ok, asked.text);
  const image = refusal(bmoe(ref.imageArgs));
  check('wasm only, --image: exit 1, one error line naming bmoe native build (no multimodal library in wasm32-wasi)', image.ok, image.text);
  // A memory limit below the model plus its runtime: the settings rule would stream, wasm cannot.
  const cg = createMemoryCgroup(384 * 2 ** 20, `bmoe-registry-${process.pid}`);
  try {
    const script = `echo $$ > '${join(cg.dir, 'cgroup.procs')}' && exec "$@"`;
    const r = refusal(run('/bin/sh', ['-c', script, 'sh', join(site.binDir, 'npx'), '--no-install', '@bmoe/cli', ...ref.runArgs], { cwd: site.app, env: { ...site.env, ...env } }));
    check('wasm only, a model bigger than what a 384 MiB memory cgroup leaves: refused before loading, one error line naming bmoe native build', r.ok, r.text);
  } finally {
    removeCgroup(cg);
  }
  // The build: the tools from the system's PATH (a phone gets them from `pkg install clang cmake ninja git`).
  const t0 = performance.now();
  const build = bmoe(['native', 'build'], { PATH: `${site.binDir}:/usr/bin:/bin` });
  const seconds = (performance.now() - t0) / 1000;
  const built = /built (\S+) in (.+)$/m.exec(build.stderr);
  check('bmoe native build: the addon built from the installed package and the pinned llama.cpp, for this CPU',
    build.status === 0 && built !== null && built[1].startsWith(cacheDir), built ? `${built[1]} in ${seconds.toFixed(0)} s` : build.stderr.slice(-2000));
  const after = status();
  check('bmoe native status after the build: the local build, streaming', after.loaded?.kind === 'local' && after.streaming === true, JSON.stringify(after.loaded ?? after.error));
  for (const [what, extra] of [['resident', []], ['streamed, cache 0', ['--moe-stream', '--cache-mb', '0']]]) {
    const r = bmoe([...ref.runArgs, ...extra]);
    const t = r.status === 0 ? tokensOf(r.stdout) : { ids: [], text: r.stderr.slice(-1000) };
    check(`the local build, ${what}: the same ${N} greedy tokens as this checkout's build`, JSON.stringify(t.ids) === JSON.stringify(ref.expected.ids), JSON.stringify(t.text.slice(0, 60)));
  }
}

async function main() {
  const prebuilt = join(root, 'packages', 'core-native', 'npm', 'linux-x64-gnu', 'bmoe.linux-x64-gnu.node');
  if (!existsSync(prebuilt)) {
    throw new Error(`${prebuilt}: not built; run node packages/core-native/scripts/build-target.mjs linux-x64-gnu`);
  }
  if (!existsSync(cli)) throw new Error(`${cli}: not built; run npm test (or npm run build) first`);
  const tmp = mkdtempSync(join(tmpdir(), 'bmoe-registry-'));
  let verdaccio;
  try {
    const { url, npmEnv } = await startRegistry(tmp, (child) => (verdaccio = child));
    const { wasmPublished } = publishPackages(tmp, url, npmEnv);
    const ref = reference(tmp);
    const site = bareSite(tmp, npmEnv);
    if (!installFromRegistry(site, url)) return;
    checkPrebuilt(site, ref);
    if (!wasmPublished) throw new Error('packages/core-native/npm/wasm32-wasi/bmoe.wasm32-wasi.wasm: not built; run node packages/core-native/scripts/build-wasm.mjs');
    checkWasm(tmp, site, ref);
    checkLocalBuild(tmp, npmEnv, ref);
  } finally {
    verdaccio?.kill('SIGTERM');
    if (!process.env.BMOE_KEEP_TMP) rmSync(tmp, { recursive: true, force: true });
    else console.log(`kept ${tmp}`);
  }
}

try {
  await main();
} catch (e) {
  check('registry test ran to the end', false, e instanceof Error ? e.message : String(e));
}
const failed = results.filter((r) => !r.ok).length;
console.log(`registry: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
