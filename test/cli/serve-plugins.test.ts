/**
 * `gymwire serve --plugin` as a process: a plugin that throws while it loads, or whose top-level
 * await never settles, stops serve with exit code 1 and a message naming the plugin and the reason
 * (instead of an unnamed failure, or exit code 13 and no message at all).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { serveProcess } from '../helpers/serve-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'gymwire-plugins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs serve with one plugin made of `code`; resolves with its exit code and stderr. */
async function serveWith(name: string, code: string, ...flags: string[]): Promise<{ code: number | null; stderr: string; file: string }> {
  const file = join(dir, name);
  writeFileSync(file, code);
  const child = serveProcess(['--port', '0', '--log-level', 'warn', '--plugin', file, ...flags]);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { code: exit, stderr, file };
}

describe.concurrent('gymwire serve --plugin that cannot start', () => {
  it('names the plugin and the error it threw at import', async () => {
    const { code, stderr, file } = await serveWith('throws.mjs', "throw new Error('no license server reachable');\n");
    expect(code).toBe(1);
    expect(stderr).toContain(`plugin ${file} failed in its import: Error: no license server reachable`);
  }, 60_000);

  it('names the plugin and the non-error its register() threw', async () => {
    const { code, stderr, file } = await serveWith('register-throws.mjs', 'export function register() { throw Object.create(null); }\n');
    expect(code).toBe(1);
    expect(stderr).toContain(`plugin ${file} failed in its register(registry): {}`);
  }, 60_000);

  it('names the plugin whose top-level await never settles, after --plugin-timeout', async () => {
    const { code, stderr, file } = await serveWith('hangs.mjs', 'await new Promise(() => {});\nexport function register() {}\n', '--plugin-timeout', '1s');
    expect(code).toBe(1);
    expect(stderr).toContain(`plugin ${file} did not finish its import within 1000 ms`);
  }, 60_000);
});
