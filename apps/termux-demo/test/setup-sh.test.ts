// setup.sh: shellcheck-clean, and run in a simulated Termux: a temp PREFIX and HOME, a fake `pkg`
// on PATH that "installs" nodejs into $PREFIX/bin, a PATH holding only basic tools (no node until
// pkg installs it), a non-root user (nobody, through setpriv, when the suite runs as root), and
// the workspace packages packed into local tarballs in place of the npm registry. Then the
// installed `bmoe-demo` serves a fixture, as a Termux user would start it.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, PKG_DIR, REPO_DIR } from './fixtures.js';

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
const SETUP = join(PKG_DIR, 'setup.sh');
/** npm's cache survives between runs (third-party packages are fetched once). */
const NPM_CACHE = join(tmpdir(), 'bmoe-demo-npm-cache');
const TOOLS = 'sh dash bash env df awk sed grep mkdir dd rm cat head tail id uname tr cut wc ls dirname basename readlink realpath sort mktemp chmod ln cp mv touch sleep tar gzip find'.split(' ');

interface Run {
  code: number | null;
  out: string;
}

let root: string;
let tarballs: string;
let native: string;
/** setup.sh copied into the simulated tree (the checkout may be unreadable to nobody). */
let script: string;

/** A fresh Termux-like tree: $root/usr (PREFIX), $root/home (HOME), shims and basic tools. */
function makeRoot(name: string, pkgWorks = true): { dir: string; prefix: string; home: string; path: string } {
  const dir = join(root, name);
  const prefix = join(dir, 'usr');
  const home = join(dir, 'home');
  for (const d of [join(prefix, 'bin'), home, join(dir, 'shim'), join(dir, 'sysbin')]) mkdirSync(d, { recursive: true });
  for (const t of TOOLS) {
    const r = spawnSync('sh', ['-c', `command -v ${t}`], { encoding: 'utf8' });
    const p = r.stdout.trim();
    if (r.status === 0 && p.startsWith('/')) spawnSync('ln', ['-s', p, join(dir, 'sysbin', t)]);
  }
  const npmCli = realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim());
  const pkg = pkgWorks
    ? `#!/bin/sh
echo "pkg $*" >> "${dir}/pkg.log"
[ "$1" = install ] || exit 1
printf '#!/bin/sh\\nexec "%s" "$@"\\n' "${process.execPath}" > "${prefix}/bin/node"
printf '#!/bin/sh\\nexec "%s" "%s" "$@"\\n' "${process.execPath}" "${npmCli}" > "${prefix}/bin/npm"
chmod +x "${prefix}/bin/node" "${prefix}/bin/npm"
`
    : `#!/bin/sh
echo "pkg $*" >> "${dir}/pkg.log"
echo "E: Unable to locate package nodejs" >&2
exit 100
`;
  writeFileSync(join(dir, 'shim', 'pkg'), pkg, { mode: 0o755 });
  if (asRoot) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir]);
  return { dir, prefix, home, path: `${prefix}/bin:${dir}/shim:${dir}/sysbin` };
}

/** npm settings of this machine that a fresh HOME would lose (CA file, registry, proxies). */
function npmEnv(): Record<string, string> {
  const env: Record<string, string> = { npm_config_cache: NPM_CACHE, npm_config_update_notifier: 'false' };
  for (const key of ['cafile', 'registry']) {
    const v = spawnSync('npm', ['config', 'get', key], { encoding: 'utf8' }).stdout.trim();
    if (v && v !== 'null' && v !== 'undefined') env[`npm_config_${key}`] = v;
  }
  for (const key of ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy']) {
    const v = process.env[key];
    if (v) env[key] = v;
  }
  return env;
}

/** Runs `argv` as nobody (when root) with exactly `env`. */
function command(argv: string[], env: Record<string, string>): string[] {
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const base = ['env', '-i', ...envArgs, ...argv];
  return asRoot ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...base] : base;
}

function run(argv: string[], env: Record<string, string>, timeoutMs = 240_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = command(argv, env);
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

function termuxEnv(t: { prefix: string; home: string; path: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: t.home,
    PREFIX: t.prefix,
    TERMUX_VERSION: '0.118.3',
    PATH: t.path,
    BMOE_TARBALL_DIR: tarballs,
    BMOE_NATIVE_PATH: native,
    ...npmEnv(),
    ...extra,
  };
}

/** pnpm 9's CLI script: the one on PATH, else the copy `npx pnpm@9` keeps in npm's cache. */
function pnpmArgv(): string[] {
  const onPath = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (onPath.status === 0 && /^9\./.test(onPath.stdout.trim())) return ['pnpm'];
  const npx = join(spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).stdout.trim(), '_npx');
  for (const d of existsSync(npx) ? readdirSync(npx) : []) {
    const pj = join(npx, d, 'node_modules', 'pnpm', 'package.json');
    if (existsSync(pj) && /^9\./.test((JSON.parse(readFileSync(pj, 'utf8')) as { version: string }).version)) {
      return [process.execPath, join(npx, d, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs')];
    }
  }
  return [process.execPath, join(REPO_DIR, 'scripts', 'pnpm.mjs')];
}

/** `pnpm pack` of every workspace package (workspace:* ranges become versions), in parallel. */
async function packWorkspace(dest: string): Promise<void> {
  const dirs = [...readdirSync(join(REPO_DIR, 'packages')).map((d) => join(REPO_DIR, 'packages', d)), PKG_DIR].filter((d) => {
    const pj = join(d, 'package.json');
    return existsSync(pj) && !(JSON.parse(readFileSync(pj, 'utf8')) as { private?: boolean }).private;
  });
  const [cmd, ...pre] = pnpmArgv();
  await Promise.all(
    dirs.map(
      (cwd) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(cmd!, [...pre, 'pack', '--pack-destination', dest], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
          let err = '';
          child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
          child.on('error', reject);
          child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`pnpm pack in ${cwd} exited ${code}: ${err}`))));
        }),
    ),
  );
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'bmoe-termux-sim-'));
  chmodSync(root, 0o755);
  tarballs = join(root, 'tarballs');
  mkdirSync(tarballs);
  await packWorkspace(tarballs);
  // The native addon built in this checkout, copied where nobody can read it (the tarballs carry
  // no binary; on a phone it comes from @bmoe/core-native-android-arm64).
  script = join(root, 'setup.sh');
  copyFileSync(SETUP, script);
  native = join(root, 'bmoe.node');
  copyFileSync(join(REPO_DIR, 'packages', 'core-native', 'build', 'Release', 'bmoe.node'), native);
  mkdirSync(NPM_CACHE, { recursive: true });
  if (asRoot) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, NPM_CACHE]);
  spawnSync('chmod', ['-R', 'a+rX', root]);
}, 180_000);

afterAll(() => {
  // BMOE_KEEP_SIM=1 keeps the simulated tree for a look after a failure.
  if (root && !process.env.BMOE_KEEP_SIM) rmSync(root, { recursive: true, force: true });
});

describe('setup.sh', () => {
  it('is shellcheck-clean', () => {
    const r = spawnSync('shellcheck', ['--shell=sh', SETUP], { encoding: 'utf8' });
    expect(r.error, 'shellcheck is not installed (apt-get install shellcheck)').toBeUndefined();
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  describe('in a simulated Termux (temp PREFIX and HOME, fake pkg, non-root, local tarballs)', () => {
    let t: ReturnType<typeof makeRoot>;

    beforeAll(() => {
      t = makeRoot('termux');
    });

    it('installs node with pkg, the packages from the tarballs, makes the models folder, probes it and prints the start command', async () => {
      const r = await run(['sh', script], termuxEnv(t));
      expect(r.code, r.out).toBe(0);
      expect(readFileSync(join(t.dir, 'pkg.log'), 'utf8')).toBe('pkg install -y nodejs\n');
      expect(r.out).toMatch(/^bmoe demo setup: Termux 0\.118\.3, user (nobody|\S+), home /);
      for (const s of ['1/6', '2/6', '3/6', '4/6', '5/6', '6/6']) expect(r.out).toContain(`[${s}]`);
      expect(r.out).toContain('installing Node.js: pkg install -y nodejs');
      expect(r.out).toMatch(/\d+ MiB free on the filesystem of /);
      expect(r.out).toMatch(/RAM \d+ MiB, available now \d+ MiB/);
      expect(r.out).toMatch(/from \d+ local tarballs in /);
      expect(r.out).toContain('installed bmoe-demo 0.1.0');
      expect(r.out).toContain('Not on /sdcard');
      expect(r.out).toMatch(/probe: O_DIRECT works in .*\/home\/bmoe\/models/);
      expect(r.out.trimEnd().split('\n').slice(-3)[0]).toBe('  bmoe-demo --open');
      // The commands are in $PREFIX/bin, the app and the models in ~/bmoe, all owned by the user.
      for (const b of ['bmoe', 'bmoe-demo']) expect(lstatSync(join(t.prefix, 'bin', b)).isSymbolicLink()).toBe(true);
      const models = join(t.home, 'bmoe', 'models');
      expect(statSync(models).isDirectory()).toBe(true);
      if (asRoot) expect(statSync(models).uid).toBe(NOBODY);
      expect(existsSync(join(t.home, 'bmoe', 'app', 'node_modules', '@bmoe', 'termux-demo', 'public', 'index.html'))).toBe(true);
    });

    it('does nothing twice: a second run skips pkg and npm', async () => {
      const r = await run(['sh', script], termuxEnv(t));
      expect(r.code, r.out).toBe(0);
      expect(readFileSync(join(t.dir, 'pkg.log'), 'utf8')).toBe('pkg install -y nodejs\n');
      expect(r.out).toMatch(/node \d+\.\d+\.\d+ and npm \S+ already installed/);
      expect(r.out).toContain('already installed (bmoe-demo 0.1.0)');
      expect(r.out).not.toContain('local tarballs');
      expect(r.out).toContain('bmoe-demo --open');
    });

    it('the installed bmoe-demo lists and serves a model put in ~/bmoe/models', async () => {
      const models = join(t.home, 'bmoe', 'models');
      copyFileSync(fixture('tiny-qwen3moe'), join(models, 'tiny-qwen3moe.gguf'));
      if (asRoot) chownSync(join(models, 'tiny-qwen3moe.gguf'), NOBODY, NOBODY);
      const env = { ...termuxEnv(t), PATH: t.path };
      const list = await run([join(t.prefix, 'bin', 'bmoe-demo'), 'models'], env);
      expect(list.code, list.out).toBe(0);
      expect(list.out).toMatch(/bmoe\/models: 1 model\(s\); RAM [\d.]+ GiB, \d+ cores, the demo may hold [\d.]+ GiB/);
      expect(list.out).toMatch(/tiny-qwen3moe\.gguf {2}9 MiB {2}resident {2}-t \d -c 4096/);

      const [cmd, ...args] = command([join(t.prefix, 'bin', 'bmoe-demo'), '--port', '0'], env);
      const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      try {
        let out = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
        const url = await new Promise<string>((resolve, reject) => {
          child.stdout.setEncoding('utf8').on('data', (d: string) => {
            out += d;
            const m = /open (http:\/\/127\.0\.0\.1:\d+\/) in the phone's browser/.exec(out);
            if (m?.[1]) resolve(m[1]);
          });
          child.on('close', (code) => reject(new Error(`bmoe-demo exited ${code}: ${out}`)));
        });
        await expect.poll(async () => ((await (await fetch(new URL('/api/state', url))).json()) as { state: string }).state, { timeout: 30_000 }).toBe('ready');
        expect((await fetch(url)).headers.get('content-type')).toContain('text/html');
        const res = await fetch(new URL('/v1/chat/completions', url), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, temperature: 0 }),
        });
        expect(res.status).toBe(200);
        expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(3);
      } finally {
        const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
        child.kill('SIGTERM');
        expect(await closed).toBe(0);
      }
    });

    it('fails the probe step with one clear line when the engine cannot load', async () => {
      const r = await run(['sh', script], termuxEnv(t, { BMOE_NATIVE_PATH: join(root, 'missing.node') }));
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/setup\.sh: step "5\/6" failed: the bmoe engine could not probe .*bmoe\/models: /);
    });

    it('fails the install step clearly when the tarball folder is wrong', async () => {
      const r = await run(['sh', script], termuxEnv(t, { BMOE_UPGRADE: '1', BMOE_TARBALL_DIR: join(root, 'nowhere') }));
      expect(r.code).toBe(1);
      expect(r.out).toContain(`setup.sh: step "4/6" failed: BMOE_TARBALL_DIR=${join(root, 'nowhere')} is not a folder`);
    });
  });

  it('stops at step 1 with the reason when pkg cannot install nodejs', async () => {
    const t = makeRoot('broken-pkg', false);
    const r = await run(['sh', script], termuxEnv(t));
    expect(r.code).toBe(1);
    expect(readFileSync(join(t.dir, 'pkg.log'), 'utf8')).toBe('pkg install -y nodejs\n');
    expect(r.out).toContain('E: Unable to locate package nodejs');
    expect(r.out).toContain('setup.sh: step "1/6" failed: pkg install -y nodejs exited 100');
    expect(r.out).not.toContain('[2/6]');
  });

  it('outside Termux without Node.js, says what to install', async () => {
    const t = makeRoot('plain-linux');
    const env = termuxEnv(t);
    delete env.TERMUX_VERSION;
    delete env.PREFIX;
    const r = await run(['sh', script], env);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^bmoe demo setup: not Termux \(Linux\)/);
    expect(r.out).toContain('setup.sh: step "1/6" failed: Node.js >= 20.17 with npm is needed; install it with your package manager (found: none)');
    expect(existsSync(join(t.dir, 'pkg.log'))).toBe(false);
  });
});
