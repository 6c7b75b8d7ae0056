import { defineConfig } from 'vitest/config';
import { vitestOptions } from '../../tooling/config.mjs';

// global-setup makes the tiny model once per run and builds the server and the CLI when stale.
export default defineConfig(vitestOptions({ globalSetup: ['test/global-setup.ts'], testTimeout: 60_000, hookTimeout: 120_000 }));
