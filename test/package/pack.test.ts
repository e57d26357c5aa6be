/**
 * The npm package as a user gets it: `npm pack` (which builds dist/), the tarball installed into an
 * empty project with no special environment (no onnxruntime-node skip switch, no .npmrc), then the
 * command, a server and the conformance check from that install, imports from ESM and CommonJS, and
 * a strict TypeScript consumer type-checked against the shipped declarations.
 *
 * Dependencies come from the npm cache where it has them (`--prefer-offline`), else the registry.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** Install sizes above this mean a heavy optional dependency (onnxruntime-node, uws) slipped back in. */
const MAX_INSTALL_MB = 150;

/** The environment of a user's shell: nothing from this repo's npm config or its install switches. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || /^ONNXRUNTIME_NODE/i.test(key) || key === 'NODE_OPTIONS' || key.startsWith('VITEST')) continue;
    env[key] = value;
  }
  return env;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) continue;
    total += st.isDirectory() ? dirBytes(path) : st.size;
  }
  return total;
}

let work: string;
let app: string;
let gymwireBin: string;
const env = cleanEnv();

async function inApp(file: string, args: string[], timeout = 120_000): Promise<{ stdout: string; stderr: string }> {
  return run(file, args, { cwd: app, env, timeout, maxBuffer: 16 * 1024 * 1024 });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'gymwire-pack-'));
  app = join(work, 'app');
  // `npm pack` runs prepack, which builds dist/ from the sources in this checkout.
  const packed = await run(NPM, ['pack', '--json', '--pack-destination', work], { cwd: ROOT, timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });
  const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as [{ filename: string }];
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
  await inApp(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', join(work, filename)], 240_000);
  gymwireBin = join(app, 'node_modules', '.bin', 'gymwire');
}, 480_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, 60_000);

// The cases share one install and run side by side: most of their time is spent waiting on child processes.
describe.concurrent('the packed npm package, installed into an empty project', { timeout: 240_000 }, () => {
  it('installs without the optional peers and stays small', () => {
    const modules = join(app, 'node_modules');
    expect(statSync(join(modules, 'gymwire', 'dist', 'bin', 'main.js')).isFile()).toBe(true);
    expect(statSync(join(modules, 'onnxruntime-node'), { throwIfNoEntry: false })).toBeUndefined();
    expect(statSync(join(modules, 'uws'), { throwIfNoEntry: false })).toBeUndefined();
    expect(statSync(join(modules, 'tsx'), { throwIfNoEntry: false })).toBeUndefined();
    // The project has no public home yet: no placeholder repository, homepage or bugs URL.
    const manifest = JSON.parse(readFileSync(join(modules, 'gymwire', 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(['repository', 'homepage', 'bugs'].filter((k) => k in manifest)).toEqual([]);
    const mb = dirBytes(modules) / 1e6;
    process.stdout.write(`${JSON.stringify({ bench: 'package', install_mb: Number(mb.toFixed(1)) })}\n`);
    expect(mb).toBeLessThan(MAX_INSTALL_MB);
  });

  it('npx gymwire envs lists the bundled envs', async () => {
    const { stdout } = await inApp(NPM, ['exec', '--no', '--', 'gymwire', 'envs']);
    for (const id of ['gymwire/CartPole-v1', 'gymwire/Conformance-v0', 'gymwire/NavsimEnv-v1', 'gymwire/Bench2Drive-v0', 'gymwire/EvacWorldModel-v0']) {
      expect(stdout).toContain(id);
    }
  });

  it('gymwire serve answers gymwire check; EVAC and uws say how to add their optional peers', async () => {
    const server: ChildProcess = spawn(gymwireBin, ['serve', '--port', '0'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let url = '';
      for await (const line of createInterface({ input: server.stdout! })) {
        const match = /gymwire serving .* on (ws:\/\/\S+)/.exec(line);
        if (match) {
          url = match[1]!;
          break;
        }
      }
      expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
      const check = await inApp(gymwireBin, ['check', url, '--env', 'gymwire/CartPole-v1', 'gymwire/Conformance-v0']);
      expect(check.stdout).toMatch(/\d+ passed, 0 failed/);

      writeFileSync(
        join(app, 'evac.mjs'),
        `import { connect } from 'gymwire';
const client = await connect(process.argv[2]);
try { await client.make('gymwire/EvacWorldModel-v0'); console.log('made'); } catch (err) { console.log(err.message); }
await client.close();
`,
      );
      const evac = await inApp(process.execPath, ['evac.mjs', url]);
      expect(evac.stdout).toContain('needs onnxruntime-node');
      expect(evac.stdout).toContain('npm install onnxruntime-node');

      // NAVSIM and Bench2Drive sessions run on env threads: the installed package's compiled workers.
      writeFileSync(
        join(app, 'threads.mjs'),
        `import { connect, Tensor } from 'gymwire';
const client = await connect(process.argv[2]);
const navsim = await client.make('gymwire/NavsimEnv-v2');
await navsim.reset({ seed: 0 });
const plan = Tensor.from('float32', [8, 3], Array.from({ length: 8 }, (_, i) => [2 * (i + 1), 0, 0]).flat());
console.log('navsim', (await navsim.step(plan)).terminated);
const b2d = await client.make('gymwire/Bench2Drive-v0', { route: 'HighwayCutIn_0' });
await b2d.reset({ seed: 0 });
console.log('bench2drive', typeof (await b2d.step(Tensor.from('float32', [3], [0.5, 0, 0]))).reward);
await client.close();
`,
      );
      const threads = await inApp(process.execPath, ['threads.mjs', url]);
      expect(threads.stdout).toContain('navsim true');
      expect(threads.stdout).toContain('bench2drive number');
    } finally {
      server.kill('SIGTERM');
    }
    const uws = await inApp(gymwireBin, ['serve', '--port', '0', '--transport', 'uws']).catch((err: { stderr: string }) => err);
    expect(uws.stderr).toContain('npm install uws@npm:@trufflesuite/uws-js-unofficial');
  });

  it('serves a .ts plugin typed with the package exports, once the project has tsx', async () => {
    // The plugin's own project inside the app (tsx is linked there only, not where other cases look).
    const project = join(app, 'plugin-project');
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    const plugin = join(project, 'coin-plugin.ts');
    writeFileSync(
      plugin,
      `import type { Env, EnvMetadata, Registry, ResetResult, StepResult } from 'gymwire/envs';
import { spaces } from 'gymwire';

class Coin implements Env<number, number> {
  readonly observationSpace = spaces.discrete(2);
  readonly actionSpace = spaces.discrete(2);
  readonly metadata = { render_modes: [] };
  reset(): ResetResult<number> { return { obs: 0, info: {} }; }
  step(action: number): StepResult<number> { return { obs: action, reward: action, terminated: true, truncated: false, info: {} }; }
  close(): void {}
}

export function register(registry: Registry): void {
  registry.register({ id: 'mine/Coin-v0', entryPoint: () => new Coin() });
}
`,
    );
    const serve = (cwd: string) =>
      new Promise<string>((resolveLine) => {
        const child = spawn(gymwireBin, ['serve', '--port', '0', '--plugin', plugin], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        const take = (chunk: Buffer) => {
          out += chunk.toString();
          if (/on ws:\/\//.test(out)) child.kill('SIGTERM');
        };
        child.stdout!.on('data', take);
        child.stderr!.on('data', take);
        child.on('exit', () => resolveLine(out));
      });
    // Without a TypeScript loader in the project the command says how to add one.
    expect(await serve(app)).toContain('npm install tsx');
    // With tsx in the project (linked from this checkout's install) the plugin loads.
    symlinkSync(join(ROOT, 'node_modules', 'tsx'), join(project, 'node_modules', 'tsx'), 'dir');
    const out = await serve(app);
    expect(out).toMatch(/on ws:\/\//);
    expect(out).toContain('mine/Coin-v0');
  });

  it('imports from ESM and CommonJS', async () => {
    writeFileSync(
      join(app, 'esm.mjs'),
      `import { connect, Tensor } from 'gymwire';
import { startServer } from 'gymwire/server';
import { encode, decode, GYMWIRE_VERSION } from 'gymwire/protocol';
import { defaultRegistry } from 'gymwire/envs';
import { runConformance } from 'gymwire/conformance';
const server = await startServer({ port: 0 });
const client = await connect(server.url);
const env = await client.make('gymwire/CartPole-v1');
const { obs } = await env.reset({ seed: 0 });
const { obs: next, reward } = await env.step(1);
console.log(JSON.stringify({ version: GYMWIRE_VERSION, tensor: obs instanceof Tensor && next instanceof Tensor, reward,
  envs: defaultRegistry().ids().length, codec: decode(encode({ a: 1 })).a, suite: typeof runConformance }));
await client.close();
await server.close();
`,
    );
    const esm = JSON.parse((await inApp(process.execPath, ['esm.mjs'])).stdout) as Record<string, unknown>;
    expect(esm).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), tensor: true, reward: 1, envs: 6, codec: 1, suite: 'function' });
    writeFileSync(
      join(app, 'cjs.cjs'),
      `const { connect } = require('gymwire'); const { startServer } = require('gymwire/server'); console.log(typeof connect, typeof startServer);\n`,
    );
    expect((await inApp(process.execPath, ['cjs.cjs'])).stdout.trim()).toBe('function function');
  });

  it('type-checks a strict TypeScript consumer against the shipped declarations', async () => {
    writeFileSync(
      join(app, 'consumer.ts'),
      `import { connect, RemoteEnv, Tensor } from 'gymwire';
import type { ClientOptions } from 'gymwire/client';
import { startServer } from 'gymwire/server';
import type { ServerOptions } from 'gymwire/server';
import { encode, GYMWIRE_VERSION } from 'gymwire/protocol';
import type { Space } from 'gymwire/protocol';
import { defaultRegistry } from 'gymwire/envs';
import type { Env, EnvMetadata, Registry, ResetResult, StepResult } from 'gymwire/envs';
import { runConformance, targetFromUrl } from 'gymwire/conformance';

// A plugin author's env and register function, typed with the package's exports.
class Coin implements Env<number, number> {
  readonly observationSpace = { type: 'discrete' as const, n: 2, start: 0, dtype: 'int64' as const };
  readonly actionSpace = { type: 'discrete' as const, n: 2, start: 0, dtype: 'int64' as const };
  readonly metadata: EnvMetadata = { render_modes: [] };
  reset(): ResetResult<number> { return { obs: 0, info: {} }; }
  step(action: number): StepResult<number> { return { obs: action, reward: action, terminated: true, truncated: false, info: {} }; }
  close(): void {}
}
export function register(registry: Registry): void {
  registry.register({ id: 'mine/Coin-v0', entryPoint: () => new Coin() });
}

export async function main(options: ClientOptions, serverOptions: ServerOptions): Promise<number> {
  const server = await startServer(serverOptions);
  const client = await connect(server.url, options);
  const env: RemoteEnv = await client.make('gymwire/CartPole-v1');
  const { obs } = await env.reset({ seed: 0 });
  const space: Space = env.observationSpace;
  await client.close();
  await server.close();
  const bytes: Uint8Array = encode({ version: GYMWIRE_VERSION });
  const reports = await runConformance(targetFromUrl(server.url));
  return (obs instanceof Tensor ? 1 : 0) + bytes.length + defaultRegistry().ids().length + reports.length + (space ? 1 : 0);
}
`,
    );
    // The consumer's own compiler settings: strict, NodeNext, and no skipLibCheck, so the shipped
    // .d.ts files are checked too. TypeScript and @types/node come from this checkout.
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = await inApp(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.']).catch((err: { stdout: string }) => err);
    expect(tsc.stdout).toBe('');
  });
});
