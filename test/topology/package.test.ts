/**
 * The npm package's shape against the code: every `exports` entry and the `bin` have a source that
 * the build compiles; everything they import, transitively, lies inside the compiled folders, needs
 * only packages the package depends on, and finds its non-code files (URLs relative to the module)
 * among the files the build copies.
 */
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { ASSETS } from '../../scripts/build.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface PackageJson {
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; default: string }>;
  files: string[];
  main: string;
  types: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[]; compilerOptions: { outDir: string } };
const OUT = build.compilerOptions.outDir;

/** dist/a/b.js (or .d.ts) -> a/b.ts, the source the build compiles it from. */
function sourceOf(built: string): string {
  const path = built.replace(/^\.\//, '');
  expect(path.startsWith(`${OUT}/`), `${built} lies outside ${OUT}/`).toBe(true);
  return path.slice(OUT.length + 1).replace(/\.d\.ts$|\.js$/, '.ts');
}

const ENTRIES = [
  ...Object.values(pkg.bin).map(sourceOf),
  ...Object.values(pkg.exports)
    .filter((e): e is { types: string; default: string } => typeof e !== 'string')
    .map((e) => sourceOf(e.default)),
];

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s*['"]([^'"]+)['"]/gm;
const MODULE_URL = /new URL\(\s*(?:'(\.{1,2}\/[^']*)'|`(\.{1,2}\/[^`$]*))/g;

/** Every source file the entries reach through relative imports, the bare packages they import, and their module-relative URLs. */
function walk(): { files: Set<string>; packages: Map<string, string>; urls: Array<{ from: string; path: string }> } {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const urls: Array<{ from: string; path: string }> = [];
  const queue = [...ENTRIES];
  while (queue.length) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    // Comments hold examples with import lines of their own.
    const text = readFileSync(join(ROOT, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      if (spec.startsWith('.')) queue.push(relative(ROOT, resolve(ROOT, dirname(file), spec)));
      else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
        const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
        if (!packages.has(name)) packages.set(name, file);
      }
    }
    for (const m of text.matchAll(MODULE_URL)) urls.push({ from: file, path: relative(ROOT, resolve(ROOT, dirname(file), m[1] ?? m[2]!)) });
  }
  return { files, packages, urls };
}

const graph = walk();

/** A template URL (`./assets/tiny-${size}`) names a prefix: its folder must exist. */
function exists(path: string): boolean {
  return existsSync(join(ROOT, path)) || existsSync(join(ROOT, dirname(path)));
}

describe('package topology', () => {
  it('bin and every export entry have a compiled source, with declarations beside the JavaScript', () => {
    expect(pkg.bin).toEqual({ gymwire: `${OUT}/bin/main.js` });
    expect(readFileSync(join(ROOT, 'bin/main.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(pkg.exports['.']).toEqual(pkg.exports['./client']);
    expect(pkg.main).toBe((pkg.exports['.'] as { default: string }).default);
    expect(pkg.types).toBe((pkg.exports['.'] as { types: string }).types);
    for (const [name, entry] of Object.entries(pkg.exports)) {
      if (typeof entry === 'string') continue;
      expect(Object.keys(entry), name).toEqual(['types', 'default']);
      expect(entry.types.replace(/\.d\.ts$/, ''), name).toBe(entry.default.replace(/\.js$/, ''));
      expect(existsSync(join(ROOT, sourceOf(entry.default))), `${name}: ${sourceOf(entry.default)}`).toBe(true);
    }
    for (const entry of ['./server', './protocol', './envs', './conformance']) expect(pkg.exports).toHaveProperty([entry]);
  });

  it('the package ships the compiled folder and the docs, not sources or tests', () => {
    expect(pkg.files).toContain(OUT);
    for (const path of pkg.files.filter((f) => !f.startsWith('!'))) expect(['dist', 'docs', 'CHANGELOG.md']).toContain(path);
  });

  it('what the entries import lies inside the folders the build compiles', () => {
    const roots = build.include;
    const outside = [...graph.files].filter((f) => !roots.some((r) => f === r || f.startsWith(`${r}/`)));
    expect(outside).toEqual([]);
    expect(graph.files).toContain('conformance/suite.ts');
  });

  it('every package the entries import is a dependency or an optional peer, never a dev dependency', () => {
    const shipped = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies)]);
    const missing = [...graph.packages].filter(([name]) => !shipped.has(name)).map(([name, from]) => `${name} (imported by ${from})`);
    expect(missing).toEqual([]);
    for (const peer of Object.keys(pkg.peerDependencies)) expect(pkg.peerDependenciesMeta[peer]?.optional, peer).toBe(true);
    expect(pkg.dependencies).not.toHaveProperty('tsx');
  });

  it("the non-code files the entries load beside themselves are among the build's copied assets", () => {
    expect(graph.urls.map((u) => u.path)).toEqual(
      expect.arrayContaining(['client/ts/policies/onnx-worker.mjs', 'server/viewer/static', 'envs/evac/assets/tiny-']),
    );
    for (const { from, path } of graph.urls) {
      if (/\.ts$/.test(path) || existsSync(join(ROOT, path.replace(/\.js$/, '.ts')))) continue; // compiled beside it
      const covered = ASSETS.some((a: string) => path === a || path.startsWith(`${a}/`) || a.startsWith(`${path.replace(/\/$/, '')}/`));
      expect(covered, `${from} loads ${path}, which scripts/build.mjs does not copy`).toBe(true);
      expect(exists(path), `${path} exists`).toBe(true);
    }
  });
});
