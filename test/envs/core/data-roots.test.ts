import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { DataPathError, DataRoots, loadClientData } from '../../../envs/core/data-roots.ts';
import { InvalidKwargsError } from '../../../envs/core/registry.ts';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'gymwire-roots-')));
const root = join(base, 'root');
const outside = join(base, 'outside');
mkdirSync(join(root, 'models', 'm1'), { recursive: true });
mkdirSync(outside);
writeFileSync(join(root, 'models', 'm1', 'a.json'), '{}');
writeFileSync(join(outside, 'secret.txt'), 'SECRET');
symlinkSync(outside, join(root, 'escape'));
symlinkSync(join(root, 'models'), join(root, 'alias'));
// A root named through a symlink is the same root.
symlinkSync(root, join(base, 'root-link'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const OUTSIDE = /^model_dir: the path is outside the data roots this server allows/;

describe('DataRoots', () => {
  const roots = new DataRoots([root]);

  it('#resolve: relative and absolute paths inside a root, symlinks inside included', () => {
    expect(roots.resolve('model_dir', 'models/m1', 'dir')).toBe(join(root, 'models', 'm1'));
    expect(roots.resolve('model_dir', join(root, 'models', 'm1'), 'dir')).toBe(join(root, 'models', 'm1'));
    expect(roots.resolve('model_dir', 'alias/m1', 'dir')).toBe(join(root, 'models', 'm1'));
    expect(roots.resolve('model_dir', 'models/m1/a.json', 'file')).toBe(join(root, 'models', 'm1', 'a.json'));
    expect(new DataRoots([join(base, 'root-link')]).resolve('model_dir', join(base, 'root-link', 'models'), 'dir')).toBe(join(root, 'models'));
  });

  it('#resolve: refuses paths outside alike, whether they exist or not', () => {
    const attempts = [
      outside,
      join(outside, 'secret.txt'),
      join(outside, 'missing'),
      '/etc',
      '/no/such/dir',
      '../outside',
      'models/../../outside',
      'escape',
      'escape/secret.txt',
      `models\0`,
    ];
    const messages = attempts.map((p) => {
      try {
        roots.resolve('model_dir', p, 'dir');
        return `resolved ${p}`;
      } catch (err) {
        expect(err).toBeInstanceOf(DataPathError);
        expect(err).toBeInstanceOf(InvalidKwargsError);
        expect((err as DataPathError).issues).toEqual([{ path: 'model_dir', message: expect.any(String) }]);
        return (err as Error).message;
      }
    });
    for (const m of messages) expect(m).toMatch(OUTSIDE);
    expect(new Set(messages).size).toBe(1);
  });

  it('#resolve: inside a root, says what is missing or of the wrong kind', () => {
    expect(() => roots.resolve('model_dir', 'models/none', 'dir')).toThrow(/^model_dir: no such directory in the server's data roots$/);
    expect(() => roots.resolve('model_dir', 'models/m1/a.json', 'dir')).toThrow(/^model_dir: not a directory$/);
    expect(() => roots.resolve('model_dir', 'models', 'file')).toThrow(/^model_dir: a directory, not a file$/);
  });

  it('#resolve: with no roots, refuses everything', () => {
    expect(() => new DataRoots().resolve('scene_dir', root, 'dir')).toThrow(/^scene_dir: the path is outside/);
    expect(() => new DataRoots().resolve('scene_dir', 'x', 'dir')).toThrow(/^scene_dir: the path is outside/);
  });

  it('#confine: files named by data must stay inside the roots, and the error names no path', () => {
    expect(roots.confine('model_dir', join(root, 'alias', 'm1', 'a.json'))).toBe(join(root, 'models', 'm1', 'a.json'));
    for (const p of [join(root, 'escape', 'secret.txt'), join(root, 'models', '..', '..', 'outside', 'secret.txt'), join(root, 'missing')]) {
      let message = '';
      try {
        roots.confine('model_dir', p);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^model_dir: the data names a file (outside the data roots this server allows|that does not exist( \(missing\))?)$/);
      expect(message).not.toContain(base);
    }
    // A missing file is named (its base name) only when its folder is inside a root.
    const missingOutside = () => roots.confine('model_dir', join(base, 'outside', 'nope', 'secret.txt'));
    expect(missingOutside).toThrow(/^model_dir: the data names a file that does not exist$/);
    expect(() => roots.confine('model_dir', join(base, 'outside', 'gone.txt'))).toThrow(/^model_dir: the data names a file that does not exist$/);
  });

  it('#with adds roots; a root that does not exist fails at once', () => {
    expect(new DataRoots().with([root]).resolve('x', 'models', 'dir')).toBe(join(root, 'models'));
    expect(() => new DataRoots([join(base, 'nope')])).toThrow(/data root .*nope does not exist/);
    expect(() => new DataRoots([join(root, 'models', 'm1', 'a.json')])).toThrow(/is not a directory/);
  });
});

describe('loadClientData', () => {
  it('turns the data’s own failures into a generic client fault, and passes the rest through', async () => {
    const warned: unknown[] = [];
    const log = { warn: (obj: unknown) => warned.push(obj) } as unknown as NonNullable<Parameters<typeof loadClientData>[4]>['log'];
    const bad = loadClientData(
      'scene_dir',
      'scenes',
      () => JSON.parse('SECRET CONTENT') as unknown,
      (e) => e instanceof SyntaxError,
      { log },
    );
    await expect(bad).rejects.toThrow(/^scene_dir: the data there does not load as scenes; the server's log has the reason$/);
    await expect(bad).rejects.toBeInstanceOf(DataPathError);
    expect(warned).toHaveLength(1);
    const internal = new Error('worker exited');
    await expect(
      loadClientData(
        'scene_dir',
        'scenes',
        () => Promise.reject(internal),
        (e) => e instanceof SyntaxError,
      ),
    ).rejects.toBe(internal);
    expect(
      await loadClientData(
        'scene_dir',
        'scenes',
        () => 7,
        () => true,
      ),
    ).toBe(7);
  });
});

describe('reasons for the author of data in an allowed folder', () => {
  it('tells the loader’s reason with paths relative to the named folder and no other absolute path', async () => {
    const dir = join(root, 'models', 'm1');
    const told = loadClientData(
      'model_dir',
      'a model',
      () => {
        throw new RangeError(`${join(dir, 'w.onnx')}: input "ctx" is unexpected; see ${dir} and /etc/passwd`);
      },
      (e) => e instanceof RangeError,
      { dir },
    );
    await expect(told).rejects.toThrow(/^model_dir: the data there does not load as a model: w\.onnx: input "ctx" is unexpected; see \. and <a path>$/);
  });
});
