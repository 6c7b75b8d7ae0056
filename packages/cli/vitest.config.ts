import { defineConfig } from 'vitest/config';
import { vitestOptions } from '../../tooling/config.mjs';

// global-setup builds dist/ when stale: the tests spawn the real executable.
export default defineConfig(vitestOptions({ globalSetup: ['test/global-setup.ts'] }));
