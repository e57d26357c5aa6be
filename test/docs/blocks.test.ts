/**
 * Docs as tests: every fenced block of README.md and docs/ runs as written against one live
 * `gymwire serve` (the real command, port 0), or says above it why it cannot run in CI
 * (test/docs/blocks.ts has the markers). The documented address 127.0.0.1:8765 becomes the live
 * server's; `gymwire …` runs bin/gymwire.js; Python runs in client/python/.venv; TypeScript runs
 * through tsx with `gymwire…` imports resolved through package.json's exports to the sources, as
 * the built package resolves them to dist/. JSON and YAML blocks must parse (JSON excerpts with
 * `…` are skipped); other output blocks are not run.
 *
 * Each page's blocks run in order in one working directory (.docs-run/<page>/), which starts with
 * `model.onnx`: a seeded CartPole MLP, the model the pages' rollout commands name.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { writeMlp } from '../../scripts/onnx/mlp.ts';
import { servedUrl } from '../helpers/serve-url.ts';
import { docPages, programsOf, readPage, RUNNABLE, type DocBlock, type Program } from './blocks.ts';

const root = join(import.meta.dirname, '..', '..');
const python = join(root, 'client', 'python', '.venv', 'bin', 'python');
const workRoot = join(root, '.docs-run');
const BLOCK_TIMEOUT_MS = 120_000;

const pages = docPages(root).map((file) => ({ file, blocks: readPage(root, file) }));

/** `gymwire…` import specifiers mapped to their TypeScript sources through package.json's exports. */
function sourceImports(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { default?: string } | string> };
  const map = new Map<string, string>();
  for (const [sub, target] of Object.entries(pkg.exports)) {
    const file = typeof target === 'string' ? target : target.default;
    if (!file?.startsWith('./dist/') || !file.endsWith('.js')) continue;
    map.set(sub === '.' ? 'gymwire' : `gymwire${sub.slice(1)}`, join(root, file.slice('./dist/'.length, -'.js'.length) + '.ts'));
  }
  return map;
}
const imports = sourceImports();

function live(code: string, port: number): string {
  return code.replaceAll('127.0.0.1:8765', `127.0.0.1:${port}`);
}

function forTsx(code: string): string {
  return code.replace(/(from\s+|import\s*\(\s*)(['"])(gymwire(?:\/[^'"]*)?)\2/g, (whole, pre: string, quote: string, spec: string) => {
    const source = imports.get(spec);
    if (!source) throw new Error(`import '${spec}' is not one of the package's exports (package.json "exports")`);
    return `${pre}${quote}${source}${quote}`;
  });
}

// `gymwire` and `npx gymwire` run the checkout's command; `python` is the SDK's venv.
const SH_PRELUDE = `set -euo pipefail
gymwire() { node ${JSON.stringify(join(root, 'bin', 'gymwire.js'))} "$@"; }
npx() { if [ "$1" = gymwire ]; then shift; gymwire "$@"; else command npx "$@"; fi; }
`;

/**
 * Blocks that fail today for a bug being fixed elsewhere, keyed by page and the block's first line.
 * Expected to fail: once one passes, the test says to remove it from here.
 */
const KNOWN_FAILURES: Record<string, string> = {};

const INSTALLS = /\b(?:npm|pnpm|yarn)\s+(?:install|i|ci|publish|start|test)\b|\bpip\s+install\b/;

interface Outcome {
  ok: boolean;
  output: string;
}

function runProcess(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, input?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => {
      output += `\n[docs test: killed after ${BLOCK_TIMEOUT_MS} ms]`;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, BLOCK_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, output });
    });
    child.stdin.end(input ?? '');
  });
}

async function runProgram(program: Program, cwd: string, port: number, env: NodeJS.ProcessEnv): Promise<Outcome> {
  const first = program.blocks[0]!;
  const name = `block-L${first.line}`;
  const code = live(program.code, port);
  switch (program.lang) {
    case 'python':
      writeFileSync(join(cwd, `${name}.py`), code);
      return runProcess(python, [`${name}.py`], cwd, env);
    case 'ts': {
      let source: string;
      try {
        source = forTsx(code);
      } catch (err) {
        return { ok: false, output: (err as Error).message };
      }
      writeFileSync(join(cwd, `${name}.ts`), source);
      return runProcess(process.execPath, ['--import', 'tsx', `${name}.ts`], cwd, env);
    }
    case 'sh':
      // An install would write into the checkout under test (npm walks up to its package.json).
      if (INSTALLS.test(code)) return { ok: false, output: 'installs or starts packages: mark it "<!-- not run in CI: installs packages ... -->"' };
      writeFileSync(join(cwd, `${name}.sh`), SH_PRELUDE + code);
      return runProcess('bash', [`${name}.sh`], cwd, env);
    default:
      return { ok: false, output: `no runner for ${program.lang}` };
  }
}

/** Output and config blocks: JSON and YAML must parse; a JSON excerpt with `…` is skipped. */
function checkData(block: DocBlock): string | undefined {
  if (block.lang === 'json') {
    if (/…|\.\.\./.test(block.code)) return undefined;
    try {
      JSON.parse(block.code);
    } catch (err) {
      return (err as Error).message;
    }
  }
  if (block.lang === 'yaml' || block.lang === 'yml') {
    const parsed = spawnSync(python, ['-c', 'import sys, yaml; yaml.safe_load(sys.stdin)'], { input: block.code, encoding: 'utf8' });
    if (parsed.status !== 0) return parsed.stderr;
  }
  return undefined;
}

/** The lines that say what failed (a conformance case, an exception), then the output's end. */
function digest(output: string): string {
  const failed = output
    .split('\n')
    .filter((l) => /^(fail|FAIL)\b|Error\b/.test(l))
    .slice(0, 20);
  return [...failed, failed.length ? '...' : '', output.slice(-2500)].join('\n');
}

/** Runs at most `limit` tasks at once (the docs test shares two cores with the server). */
function limiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (active >= limit) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

describe('docs: every code block runs or says why it cannot', () => {
  let server: ChildProcess;
  let port = 0;
  let env: NodeJS.ProcessEnv;
  const slot = limiter(2);

  beforeAll(async () => {
    expect(existsSync(python), 'client/python/.venv (bash client/python/scripts/test.sh --venv-only)').toBe(true);
    rmSync(workRoot, { recursive: true, force: true });
    mkdirSync(workRoot, { recursive: true });
    await writeMlp(join(workRoot, 'model.onnx'));
    const { GYMWIRE_TOKEN: _token, ...inherited } = process.env;
    env = {
      ...inherited,
      PATH: `${join(root, 'client', 'python', '.venv', 'bin')}:${process.env.PATH}`,
      GYMWIRE_PYTHON: python,
      MUJOCO_GL: 'egl',
    };
    server = spawn(process.execPath, [join(root, 'bin', 'gymwire.js'), 'serve', '--port', '0', '--gym', 'CartPole-v1', '--gym', 'HalfCheetah-v5'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stderr!.resume();
    port = Number(new URL(await servedUrl(server)).port);
  }, 60_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it.concurrent.each(pages.map((p) => [p.file, p.blocks] as const))('%s', { timeout: 600_000 }, async (file, blocks) => {
    const failures: string[] = [];
    for (const block of blocks) {
      const where = `${file}:${block.line} (${block.lang || 'plain'})`;
      if (block.badMarker) failures.push(`${where}: ${block.badMarker}`);
      else if (!block.notRun && !RUNNABLE.has(block.lang)) {
        const problem = checkData(block);
        if (problem) failures.push(`${where} does not parse: ${problem}`);
      }
    }
    const cwd = join(workRoot, file.replace(/[/.]/g, '_'));
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, 'model.onnx'), readFileSync(join(workRoot, 'model.onnx')));
    for (const program of programsOf(blocks)) {
      const outcome = await slot(() => runProgram(program, cwd, port, env));
      const known = KNOWN_FAILURES[`${file}: ${program.code.split('\n')[0]}`];
      if (known) {
        if (outcome.ok) failures.push(`${file} block at line ${program.blocks[0]!.line} passes now: remove it from KNOWN_FAILURES (${known})`);
        continue;
      }
      if (!outcome.ok) {
        const lines = program.blocks.map((b) => b.line).join(', ');
        failures.push(`${file} block at line ${lines} (${program.lang}) failed:\n${digest(outcome.output)}`);
      }
    }
    expect(failures, failures.join('\n\n')).toEqual([]);
  });
});
