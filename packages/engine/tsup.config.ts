import { defineConfig } from 'tsup';
import { tsupOptions } from '../../tooling/config.mjs';

export default defineConfig(tsupOptions({ entry: ['src/index.ts', 'src/metrics/index.ts', 'src/options/index.ts'] }));
