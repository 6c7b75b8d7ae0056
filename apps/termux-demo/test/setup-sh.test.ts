// setup.sh: shellcheck-clean, and run in a simulated Termux: a temp PREFIX and HOME, a fake `pkg`
// on PATH that "installs" nodejs (node and npm shims) and the build tools (clang, cmake, ninja,
// git: stand-ins that only fail) into $PREFIX/bin, a PATH holding only basic tools (no node until
// pkg installs it), a non-root user (nobody, through setpriv, when the suite runs as root), and
// the workspace packages packed into local tarballs in place of the npm registry. Then the
// installed `bmoe-demo` serves a fixture, as a Termux user would start it. The native binary is
// this checkout's build through BMOE_NATIVE_PATH (`bmoe native status` says `env`), so no run
// here builds one: where a build would start, the tests stop before it (never, or a missing tool).
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
/** The wasm32-wasi package packed apart (npm installs it only with --force: its cpu is wasm32). */
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
fake_tool() { printf '#!/bin/sh\\necho "%s: a stand-in of the Termux shim" >&2\\nexit 1\\n' "$1" > "${prefix}/bin/$1"; chmod +x "${prefix}/bin/$1"; }
[ "$1" = install ] || exit 1
shift
for p in "$@"; do
  case "$p" in
    -y) ;;
    nodejs)
      printf '#!/bin/sh\\nexec "%s" "$@"\\n' "${process.execPath}" > "${prefix}/bin/node"
      printf '#!/bin/sh\\nexec "%s" "%s" "$@"\\n' "${process.execPath}" "${npmCli}" > "${prefix}/bin/npm"
      chmod +x "${prefix}/bin/node" "${prefix}/bin/npm" ;;
    clang) for c in clang clang++; do fake_tool "$c"; done ;;
    cmake | ninja | git | tar) fake_tool "$p" ;;
    *) echo "E: Unable to locate package $p" >&2; exit 100 ;;
  esac
done
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

/** The public workspace packages setup.sh installs: packages/* and this one (not the platform packages). */
function workspaceDirs(): string[] {
  return [...readdirSync(join(REPO_DIR, 'packages')).map((d) => join(REPO_DIR, 'packages', d)), PKG_DIR].filter((d) => {
    const pj = join(d, 'package.json');
    return existsSync(pj) && !(JSON.parse(readFileSync(pj, 'utf8')) as { private?: boolean }).private;
  });
}

/** `pnpm pack` of each of `dirs` into `dest` (workspace:* ranges become versions), in parallel. */
async function packWorkspace(dest: string, dirs: string[] = workspaceDirs()): Promise<void> {
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
  // no binary; on a phone it comes from @bmoe/core-native-android-arm64 or bmoe native build).
  script = join(root, 'setup.sh');
  copyFileSync(SETUP, script);
  native = join(root, 'bmoe.node');
  copyFileSync(join(REPO_DIR, 'packages', 'core-native', 'build-pool', 'bmoe.node'), native);
  mkdirSync(NPM_CACHE, { recursive: true });
  if (asRoot) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, NPM_CACHE]);
  spawnSync('chmod', ['-R', 'a+rX', root]);
}, 180_000);

afterAll(() => {
  // BMOE_KEEP_SIM=1 keeps the simulated tree for a look after a failure.
  if (root && !process.env.BMOE_KEEP_SIM) rmSync(root, { recursive: true, force: true });
});

/** The lines setup.sh prints last: what `bmoe native status` printed, after this header. */
const STATUS_HEADER = 'The native binary (bmoe native status):';

/** What setup.sh printed after the status header (its last lines). */
function statusTail(out: string): string {
  const at = out.lastIndexOf(STATUS_HEADER);
  return at < 0 ? '' : out.slice(at + STATUS_HEADER.length).trim();
}

/** The pkg calls so far, one line each. */
function pkgLog(t: { dir: string }): string {
  const log = join(t.dir, 'pkg.log');
  return existsSync(log) ? readFileSync(log, 'utf8') : '';
}

/** The lines of a text, sorted (stdout and stderr may interleave differently from run to run), process ids masked (node's warnings name them). */
function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trimEnd().replace(/^\(node:\d+\)/, '(node:PID)'))
    .filter(Boolean)
    .sort();
}

/** True when a run started `bmoe native build` (setup says so first; the build writes ~/.cache/bmoe/native). */
function built(r: Run, t: { home: string }): boolean {
  return r.out.includes('building the native binary for this CPU') || existsSync(join(t.home, '.cache', 'bmoe', 'native'));
}

describe('setup.sh', () => {
  it('is shellcheck-clean', () => {
    const r = spawnSync('shellcheck', ['--shell=sh', SETUP], { encoding: 'utf8' });
    expect(r.error, 'shellcheck is not installed (apt-get install shellcheck)').toBeUndefined();
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('--help lists the settings, BMOE_NATIVE_BUILD among them; a bad BMOE_NATIVE_BUILD is refused before any step', () => {
    const help = spawnSync('sh', [SETUP, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    for (const v of ['BMOE_HOME', 'BMOE_MODELS_DIR', 'BMOE_TARBALL_DIR', 'BMOE_UPGRADE=1', 'BMOE_NATIVE_BUILD=auto|always|never']) expect(help.stdout).toContain(v);
    expect(help.stdout).toMatch(/auto \(default\) when no native binary loads/);
    const bad = spawnSync('sh', [SETUP], { encoding: 'utf8', env: { ...process.env, BMOE_NATIVE_BUILD: 'sometimes' } });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('setup.sh: BMOE_NATIVE_BUILD=sometimes: use auto, always or never (try --help)\n');
    expect(bad.stdout).toBe('');
  });

  describe('in a simulated Termux (temp PREFIX and HOME, fake pkg, non-root, local tarballs)', () => {
    let t: ReturnType<typeof makeRoot>;
    /** `bmoe native status` of the installed app, run as setup.sh runs it, in `env`. */
    const status = async (env: Record<string, string>): Promise<string> => {
      const r = await run([join(t.home, 'bmoe', 'app', 'node_modules', '.bin', 'bmoe'), 'native', 'status'], env);
      return r.out.trim();
    };

    beforeAll(() => {
      t = makeRoot('termux');
    });

    it('installs node and the missing build tools with pkg, the packages from the tarballs, finds the native binary (no build), makes the models folder, probes it, prints the start command and ends with bmoe native status', async () => {
      const r = await run(['sh', script], termuxEnv(t));
      expect(r.code, r.out).toBe(0);
      expect(pkgLog(t)).toBe('pkg install -y nodejs\npkg install -y clang cmake ninja git\n');
      expect(r.out).toMatch(/^bmoe demo setup: Termux 0\.118\.3, user (nobody|\S+), home /);
      for (const s of ['1/7', '2/7', '3/7', '4/7', '5/7', '6/7', '7/7']) expect(r.out).toContain(`[${s}]`);
      expect(r.out).toContain('installing Node.js: pkg install -y nodejs');
      expect(r.out).toMatch(/\d+ MiB free on the filesystem of /);
      expect(r.out).toMatch(/RAM \d+ MiB, available now \d+ MiB/);
      expect(r.out).toMatch(/from \d+ local tarballs in /);
      expect(r.out).toContain('installed bmoe-demo 0.1.0');
      // Step 5: the build tools, then the binary the loader takes (BMOE_NATIVE_PATH: `env`).
      expect(r.out).toContain('installing the build tools bmoe native build needs: pkg install -y clang cmake ninja git');
      expect(r.out).toContain(`a native binary loads (env: ${native}); expert streaming: yes`);
      expect(r.out).toContain('nothing to build');
      expect(built(r, t)).toBe(false);
      expect(r.out).toContain('Not on /sdcard');
      expect(r.out).toMatch(/probe: O_DIRECT works in .*\/home\/bmoe\/models/);
      // The start command, then the status lines last.
      const start = r.out.indexOf('  bmoe-demo --open\n');
      expect(start).toBeGreaterThan(0);
      expect(r.out.indexOf(STATUS_HEADER)).toBeGreaterThan(start);
      const tail = statusTail(r.out);
      expect(tail).not.toBe('');
      expect(lines(tail)).toEqual(lines(await status(termuxEnv(t))));
      expect(r.out.trimEnd().endsWith(tail)).toBe(true);
      // The commands are in $PREFIX/bin, the app and the models in ~/bmoe, all owned by the user.
      for (const b of ['bmoe', 'bmoe-demo']) expect(lstatSync(join(t.prefix, 'bin', b)).isSymbolicLink()).toBe(true);
      for (const b of ['clang', 'clang++', 'cmake', 'ninja', 'git']) expect(existsSync(join(t.prefix, 'bin', b))).toBe(true);
      const models = join(t.home, 'bmoe', 'models');
      expect(statSync(models).isDirectory()).toBe(true);
      if (asRoot) expect(statSync(models).uid).toBe(NOBODY);
      expect(existsSync(join(t.home, 'bmoe', 'app', 'node_modules', '@bmoe', 'termux-demo', 'public', 'index.html'))).toBe(true);
    });

    it('does nothing twice: a second run skips pkg (node and the build tools are there), npm and the build', async () => {
      const r = await run(['sh', script], termuxEnv(t));
      expect(r.code, r.out).toBe(0);
      expect(pkgLog(t)).toBe('pkg install -y nodejs\npkg install -y clang cmake ninja git\n');
      expect(r.out).toMatch(/node \d+\.\d+\.\d+ and npm \S+ already installed/);
      expect(r.out).toContain('already installed (bmoe-demo 0.1.0)');
      expect(r.out).not.toContain('local tarballs');
      expect(r.out).toContain('build tools present (C++ compiler, cmake, ninja, git)');
      expect(r.out).not.toContain('installing the build tools');
      expect(r.out).toContain('nothing to build');
      expect(built(r, t)).toBe(false);
      expect(r.out).toContain('bmoe-demo --open');
      expect(statusTail(r.out)).not.toBe('');
    });

    it('installs only the build tools that are missing', async () => {
      for (const b of ['clang', 'clang++', 'ninja']) rmSync(join(t.prefix, 'bin', b));
      const r = await run(['sh', script], termuxEnv(t));
      expect(r.code, r.out).toBe(0);
      expect(pkgLog(t)).toBe('pkg install -y nodejs\npkg install -y clang cmake ninja git\npkg install -y clang ninja\n');
      expect(r.out).toContain('installing the build tools bmoe native build needs: pkg install -y clang ninja');
      expect(built(r, t)).toBe(false);
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

    it('fails the native step with one line, and builds nothing, when BMOE_NATIVE_PATH does not load', async () => {
      const missing = join(root, 'missing.node');
      const r = await run(['sh', script], termuxEnv(t, { BMOE_NATIVE_PATH: missing }));
      expect(r.code, r.out).toBe(1);
      expect(r.out).toContain('no bmoe binary loads: ');
      expect(r.out).toContain(`setup.sh: step "5/7" failed: BMOE_NATIVE_PATH=${missing} does not load (`);
      expect(r.out).toContain('while it is set no other binary is tried: fix or unset it');
      expect(built(r, t)).toBe(false);
      expect(r.out).not.toContain('[6/7]');
    });

    // (The wasm fallback with BMOE_NATIVE_BUILD=never, which warns and goes on, needs the wasm32-wasi
    // build, made after npm test in .ci/run; the registry test drives that fallback end to end.)
    it('BMOE_NATIVE_BUILD=never when no binary loads: stops at step 5/7 in one line, builds nothing', async () => {
      // Nothing loads: the wasm build forced, and no wasm32-wasi package in the app.
      const env = termuxEnv(t, { BMOE_NATIVE_BUILD: 'never', BMOE_FORCE_WASM: '1' });
      delete env.BMOE_NATIVE_PATH;
      const r = await run(['sh', script], env);
      expect(r.code, r.out).toBe(1);
      expect(r.out).toContain('build tools present (C++ compiler, cmake, ninja, git)');
      expect(r.out).toContain(
        'setup.sh: step "5/7" failed: no bmoe binary loads and BMOE_NATIVE_BUILD=never: nothing can run a model (run setup.sh without it to build one)',
      );
      expect(built(r, t)).toBe(false);
      expect(pkgLog(t).split('\n').filter(Boolean)).toHaveLength(3);
    });

    it('outside Termux: names the missing build tools and the apt-get line, goes on when a native binary loads, and stops before a build it cannot run', async () => {
      // node and npm alone on PATH (no compiler, cmake, ninja or git), no TERMUX_VERSION or PREFIX.
      const nodeOnly = join(t.dir, 'node-only');
      mkdirSync(nodeOnly, { recursive: true });
      for (const b of ['node', 'npm']) copyFileSync(join(t.prefix, 'bin', b), join(nodeOnly, b));
      spawnSync('chmod', ['-R', 'a+rx', nodeOnly]);
      const plain = (extra: Record<string, string> = {}): Record<string, string> => {
        const env = termuxEnv(t, { PATH: `${nodeOnly}:${t.dir}/sysbin`, ...extra });
        delete env.TERMUX_VERSION;
        delete env.PREFIX;
        return env;
      };
      const ok = await run(['sh', script], plain());
      expect(ok.code, ok.out).toBe(0);
      expect(ok.out).toMatch(/^bmoe demo setup: not Termux \(Linux\)/);
      expect(ok.out).toContain('build tools missing: c++ cmake ninja git (needed only to build the native binary here: sudo apt-get install -y g++ cmake ninja-build git)');
      expect(ok.out).toContain(`a native binary loads (env: ${native})`);
      expect(built(ok, t)).toBe(false);
      expect(statusTail(ok.out)).not.toBe('');

      const env = plain({ BMOE_FORCE_WASM: '1' });
      delete env.BMOE_NATIVE_PATH;
      const r = await run(['sh', script], env);
      expect(r.code, r.out).toBe(1);
      expect(r.out).toContain(
        'setup.sh: step "5/7" failed: cannot build the native binary: missing c++ cmake ninja git; install them (sudo apt-get install -y g++ cmake ninja-build git) and run setup.sh again',
      );
      expect(built(r, t)).toBe(false);
      expect(pkgLog(t).split('\n').filter(Boolean)).toHaveLength(3);
    });

    it('fails the install step clearly when the tarball folder is wrong', async () => {
      const r = await run(['sh', script], termuxEnv(t, { BMOE_UPGRADE: '1', BMOE_TARBALL_DIR: join(root, 'nowhere') }));
      expect(r.code).toBe(1);
      expect(r.out).toContain(`setup.sh: step "4/7" failed: BMOE_TARBALL_DIR=${join(root, 'nowhere')} is not a folder`);
    });
  });

  it('stops at step 1 with the reason when pkg cannot install nodejs', async () => {
    const t = makeRoot('broken-pkg', false);
    const r = await run(['sh', script], termuxEnv(t));
    expect(r.code).toBe(1);
    expect(readFileSync(join(t.dir, 'pkg.log'), 'utf8')).toBe('pkg install -y nodejs\n');
    expect(r.out).toContain('E: Unable to locate package nodejs');
    expect(r.out).toContain('setup.sh: step "1/7" failed: pkg install -y nodejs exited 100');
    expect(r.out).not.toContain('[2/7]');
  });

  it('outside Termux without Node.js, says what to install', async () => {
    const t = makeRoot('plain-linux');
    const env = termuxEnv(t);
    delete env.TERMUX_VERSION;
    delete env.PREFIX;
    const r = await run(['sh', script], env);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^bmoe demo setup: not Termux \(Linux\)/);
    expect(r.out).toContain('setup.sh: step "1/7" failed: Node.js >= 20.17 with npm is needed; install it with your package manager (found: none)');
    expect(existsSync(join(t.dir, 'pkg.log'))).toBe(false);
  });
});
