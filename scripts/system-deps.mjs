// The system packages a fresh machine needs before `npm run demo` or `npm test` can pass, checked
// by the commands they provide. As root with apt-get (a fresh Debian machine, CI), the missing ones
// are installed the way .ci/run installs them; otherwise one line names the command to run, and
// nothing starts that would fail later for want of them.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Debian package → the command that shows it is there. */
const BUILD = { cmake: 'cmake', 'ninja-build': 'ninja', 'g++': 'g++', git: 'git', ccache: 'ccache' };
const TEST = {
  ...BUILD,
  // apps/termux-demo's page tests drive Debian's Chromium (playwright-core, no browser download)
  // and lint setup.sh; bmoe chat's tests type into a real pseudo-terminal.
  chromium: 'chromium',
  shellcheck: 'shellcheck',
  tmux: 'tmux',
};

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Checks (and as root installs) what `purpose` ('demo' | 'test') needs; exits 1 when it cannot. */
export function ensureSystemDeps(purpose) {
  const wanted = purpose === 'test' ? TEST : BUILD;
  // ccache only speeds builds up: never a reason to stop.
  const missing = Object.entries(wanted).filter(([, cmd]) => !has(cmd)).map(([pkg]) => pkg);
  if (missing.length === 0) return;
  const required = missing.filter((p) => p !== 'ccache');
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root && has('apt-get')) {
    console.error(`[setup] installing ${missing.join(' ')} (apt-get, for ${purpose === 'test' ? 'the tests' : 'the build'})`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const update = spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
    const install = update.status === 0 && spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (install && install.status === 0) return;
    console.error(`[setup] apt-get could not install ${missing.join(' ')}`);
  }
  if (required.length === 0) return;
  const termux = existsSync('/data/data/com.termux');
  const how = termux ? `pkg install ${required.join(' ')}` : `sudo apt-get install ${required.join(' ')}`;
  console.error(`[setup] missing ${required.join(', ')} (needed for ${purpose === 'test' ? 'the tests' : 'the build'}); install them with: ${how}`);
  process.exit(1);
}
