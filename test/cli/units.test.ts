import { describe, expect, it } from 'vitest';

import { parseBytes, parseCount, parseDuration } from '../../bin/commands/units.ts';

describe('CLI units', () => {
  it('reads durations with units, bare numbers as milliseconds', () => {
    expect(parseDuration('--x', '500ms')).toBe(500);
    expect(parseDuration('--x', '60s')).toBe(60_000);
    expect(parseDuration('--x', '10m')).toBe(600_000);
    expect(parseDuration('--x', '1.5h')).toBe(5_400_000);
    expect(parseDuration('--x', '0')).toBe(0);
    expect(parseDuration('--x', '250')).toBe(250);
  });

  it('reads sizes with binary and decimal units, bare numbers as bytes', () => {
    expect(parseBytes('--x', '64MiB')).toBe(64 * 1024 * 1024);
    expect(parseBytes('--x', '1kb')).toBe(1000);
    expect(parseBytes('--x', '4096')).toBe(4096);
  });

  it('refuses bad values with the flag and an example in the message', () => {
    expect(() => parseDuration('--idle-timeout', '10 minutes')).toThrow(/--idle-timeout .*e\.g\. 60s/);
    expect(() => parseDuration('--idle-timeout', '-1s')).toThrow(/--idle-timeout/);
    expect(() => parseBytes('--max-frame-bytes', '64XB')).toThrow(/--max-frame-bytes/);
    expect(() => parseCount('--max-sessions', '1.5')).toThrow(/non-negative integer/);
  });
});
