// Where the demo looks for models: $BMOE_MODELS_DIR, else ~/bmoe/models. On Termux, ~ is the app's
// private storage on /data (ext4/f2fs: O_DIRECT works), unlike /sdcard (FUSE: it does not).
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultModelsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.BMOE_MODELS_DIR || join(env.HOME || homedir(), 'bmoe', 'models');
}
