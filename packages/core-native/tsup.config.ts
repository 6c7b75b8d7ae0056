import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['binding/index.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
