/**
 * Parsers for the CLI's durations and sizes, so flags read the way people speak of them
 * (`--idle-timeout 10m`, `--resume-grace 60s`, `--max-frame-bytes 64MiB`). A bare number keeps the
 * flag's historical unit (milliseconds, bytes). Each throws an Error naming the flag on bad input.
 *
 * @example
 * parseDuration('--idle-timeout', '10m'); // 600000
 * parseBytes('--max-frame-bytes', '64MiB'); // 67108864
 */

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
// k, m, g and t alone are binary, as in -Xmx and docker --memory; kB, MB and GB are decimal.
const BYTE_UNITS: Record<string, number> = {
  b: 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
};

function parseWithUnit(flag: string, value: string, units: Record<string, number>, bareUnit: string, example: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  const unit = m?.[2]?.toLowerCase() || bareUnit;
  const scale = units[unit];
  if (!m || scale === undefined) {
    throw new Error(
      `${flag} must be a non-negative number with an optional unit (${Object.keys(units).join(', ')}), e.g. ${example}; got ${JSON.stringify(value)}`,
    );
  }
  const out = Math.round(Number(m[1]) * scale);
  if (!Number.isSafeInteger(out)) throw new Error(`${flag} is too large: ${JSON.stringify(value)}`);
  return out;
}

/** Milliseconds from `500ms`, `60s`, `10m`, `1h` or a bare number of milliseconds. */
export function parseDuration(flag: string, value: string): number {
  return parseWithUnit(flag, value, DURATION_UNITS_MS, 'ms', '60s or 10m');
}

/** Bytes from `512k`, `64MiB`, `16g`, `1GiB` (k, m, g binary; kB, MB, GB decimal) or a bare number of bytes. */
export function parseBytes(flag: string, value: string): number {
  return parseWithUnit(flag, value, BYTE_UNITS, 'b', '64MiB');
}

/** A non-negative integer count. */
export function parseCount(flag: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new Error(`${flag} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}
