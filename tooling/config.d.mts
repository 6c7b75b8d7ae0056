export interface TsupOptions {
  entry: string[];
  format: ['esm'];
  dts: true | { entry: string };
  sourcemap: true;
  clean: true;
  target: 'node20';
}
export declare function tsupOptions(o: { entry: string[]; dtsEntry?: string }): TsupOptions;

export interface VitestOptions {
  test: {
    include: string[];
    globalSetup?: string[];
    testTimeout: number;
    hookTimeout: number;
    pool: 'forks';
  };
}
export declare function vitestOptions(o?: { globalSetup?: string[]; testTimeout?: number; hookTimeout?: number }): VitestOptions;
