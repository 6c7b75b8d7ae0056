import { defineConfig } from 'vitest/config';
import { vitestOptions } from '../../tooling/config.mjs';

// global-setup builds dist/ when stale and makes the tiny fixture models once.
export default defineConfig(vitestOptions({ globalSetup: ['test/global-setup.ts'], testTimeout: 60_000, hookTimeout: 180_000 }));
