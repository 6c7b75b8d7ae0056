// How the bench runs `bmoe` when nobody hands it a command. The bench never imports the CLI (the
// CLI depends on the bench): `bmoe bench …` passes its own executable, and the standalone
// `bmoe-bench` looks for one here, the way a shell would.
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';

/** Environment variable naming the `bmoe` executable (or its JS entry) the bench runs. */
export const ENV_BMOE_CLI = 'BMOE_CLI';

const runnable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** A JS entry runs under this Node (so the child's pid is the CLI's own process); anything else directly. */
function commandFor(path: string): string[] {
  const real = realpathSync(path);
  return /\.[cm]?js$/.test(real) ? [process.execPath, real] : [real];
}

/**
 * The argv prefix that runs `bmoe`: `$BMOE_CLI` (a file), else the first `bmoe` on `PATH`. Throws
 * one line saying how to provide one when there is none.
 */
export function findBmoeCommand(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = env[ENV_BMOE_CLI]?.trim();
  if (given) {
    const path = resolve(given);
    try {
      if (statSync(path).isFile()) return commandFor(path);
    } catch {
      // reported below
    }
    throw new Error(`${ENV_BMOE_CLI}=${given}: no such file`);
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const path = dir ? join(dir, 'bmoe') : '';
    if (path && runnable(path)) return commandFor(path);
  }
  throw new Error(`bmoe-bench runs the bmoe CLI and found none: run \`bmoe bench …\` from @bmoe/cli, put \`bmoe\` on PATH, or set ${ENV_BMOE_CLI}=/path/to/bmoe`);
}

/** Where the bench keeps the models it makes once (`$XDG_CACHE_HOME/bmoe/models`, as `bmoe demo`). */
export function modelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'bmoe', 'models');
}
