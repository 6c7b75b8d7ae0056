// Runs a build command and shows its progress in a few lines instead of hundreds (or minutes of
// silence behind a task runner): ninja's "[n/N] ..." lines become "[core-native] <label>: n/N",
// one updating line on a terminal, else a line per 10 % or per 20 s. The whole output is kept and
// printed if the command fails; BMOE_BUILD_VERBOSE=1 streams it as it comes.
import { spawn } from 'node:child_process';

const STEP = /^\[(\d+)\/(\d+)\]/;

function elapsed(ms) {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** Resolves to the command's exit status (1 when it could not start or died by a signal). */
export function runWithProgress(cmd, args, opts, label) {
  const verbose = /^(1|true|yes)$/i.test(process.env.BMOE_BUILD_VERBOSE ?? '');
  const tty = Boolean(process.stderr.isTTY);
  const t0 = Date.now();
  const out = [];
  let shownAt = 0;
  let shownPct = -1;
  let last = null;
  let pending = '';
  const show = (n, total, force) => {
    const pct = Math.floor((100 * n) / total);
    const now = Date.now();
    if (!force && !tty && pct < shownPct + 10 && now - shownAt < 20_000) return;
    shownAt = now;
    shownPct = pct;
    const line = `[core-native] ${label}: ${n}/${total} (${pct} %, ${elapsed(now - t0)})`;
    process.stderr.write(tty ? `\r${line}\x1b[K` : `${line}\n`);
  };
  const onData = (chunk) => {
    const text = pending + chunk.toString();
    const lines = text.split(/\r?\n/);
    pending = lines.pop() ?? '';
    for (const l of lines) {
      if (verbose) process.stderr.write(`${l}\n`);
      out.push(l);
      if (out.length > 5000) out.splice(0, out.length - 4000);
      const m = STEP.exec(l);
      if (m && !verbose) {
        last = [Number(m[1]), Number(m[2])];
        show(last[0], last[1], false);
      }
    }
  };
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err) => {
      process.stderr.write(`[core-native] ${label}: could not start ${cmd}: ${err.message}\n`);
      resolve(1);
    });
    child.on('close', (status, signal) => {
      if (pending) onData('\n');
      if (tty && last && !verbose) process.stderr.write('\n');
      const ok = status === 0;
      if (!ok && !verbose) process.stderr.write(`${out.slice(-200).join('\n')}\n`);
      if (ok && last) process.stderr.write(`[core-native] ${label}: done in ${elapsed(Date.now() - t0)} (${last[1]} steps)\n`);
      resolve(ok ? 0 : (status ?? (signal ? 1 : 1)));
    });
  });
}
