export declare function isCI(env?: NodeJS.ProcessEnv): boolean;
export declare function requireNative(what: string, probe: () => unknown, env?: NodeJS.ProcessEnv): Promise<boolean>;
export declare function buildIfStale(pkgDir: string, entry: string): void;
