import { defineConfig } from 'vitest/config';
import { vitestOptions } from '../../tooling/config.mjs';

export default defineConfig(vitestOptions());
