// Where pulled models go: $BMOE_MODELS_DIR; in Termux ~/bmoe/models (the folder the Termux demo
// lists, on /data where O_DIRECT works); otherwise ${XDG_CACHE_HOME:-~/.cache}/bmoe/models, beside
// the demo model.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** True inside Termux (Android). */
export function isTermux(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.TERMUX_VERSION) || (env.PREFIX ?? '').includes('com.termux');
}

/** The models folder for this environment. */
export function modelsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BMOE_MODELS_DIR) return env.BMOE_MODELS_DIR;
  const home = env.HOME || homedir();
  if (isTermux(env)) return join(home, 'bmoe', 'models');
  return join(env.XDG_CACHE_HOME || join(home, '.cache'), 'bmoe', 'models');
}
