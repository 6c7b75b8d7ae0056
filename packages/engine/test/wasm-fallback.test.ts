// The wasm32-wasi fallback never pretends: what needs streaming is refused before loading, in one
// line naming `bmoe native build` (the real fallback is driven end to end by scripts/registry-test.mjs).
import { describe, expect, it } from 'vitest';
import type { DeviceFacts } from '../src/system.js';
import { refuseWhatWasmCannot } from '../src/wasm-fallback.js';

const GiB = 2 ** 30;
const device = (availableGiB: number, cgroupRoomGiB?: number): DeviceFacts => ({
  memTotalBytes: 8 * GiB,
  memAvailableBytes: availableGiB * GiB,
  cgroup: cgroupRoomGiB === undefined ? null : { dir: '/sys/fs/cgroup/memory/x', limitBytes: cgroupRoomGiB * GiB, usedBytes: 0, roomBytes: cgroupRoomGiB * GiB, version: 1 },
  cores: 8,
});
const stream = { moeStream: true } as never;

describe('what the wasm32-wasi build cannot do', () => {
  it('refuses streaming, naming bmoe native build, in one line', () => {
    expect(() => refuseWhatWasmCannot({ path: 'm.gguf', fileBytes: 1e6 }, { stream }, device(16))).toThrow(
      expect.objectContaining({ code: 'E_UNSUPPORTED', message: expect.stringMatching(/^m\.gguf: streaming experts needs a native binary.*`bmoe native build`[^\n]*$/) }),
    );
  });

  it('refuses a model bigger than the memory left (MemAvailable, or a memory cgroup), before loading', () => {
    const big = { path: 'big.gguf', fileBytes: 6 * GiB };
    expect(() => refuseWhatWasmCannot(big, { stream: null }, device(4))).toThrow(/^big\.gguf: the model \(6\.0 GiB\) does not fit in the .* available, and the wasm32-wasi build .*`bmoe native build`/);
    expect(() => refuseWhatWasmCannot(big, { stream: null }, device(64, 2))).toThrow(/does not fit/);
  });

  it('lets a resident model that fits load', () => {
    expect(() => refuseWhatWasmCannot({ path: 'small.gguf', fileBytes: 100e6 }, { stream: null }, device(4))).not.toThrow();
  });
});
