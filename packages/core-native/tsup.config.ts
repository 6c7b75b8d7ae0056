import { defineConfig } from 'tsup';
import { tsupOptions } from '../../tooling/config.mjs';

export default defineConfig(tsupOptions({ entry: ['binding/index.ts', 'binding/contract.ts'] }));
