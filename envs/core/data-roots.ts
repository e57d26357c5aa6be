/**
 * Where make kwargs that name server paths (EVAC's `model_dir` and `dataset_dir`, NAVSIM's
 * `scene_dir`) may point: inside the server's data roots (`gymwire serve --data-root DIR`) or an
 * env family's bundled assets, after symlinks are resolved. Anything else is refused with the same
 * message whether it exists or not, so a client learns nothing about the rest of the filesystem;
 * files that data inside a root names (a manifest's model files, a dataset's images, scene files)
 * are held to the same roots. Failures to load data a client named are that client's fault and
 * are reported without the data's content ({@link loadClientData}).
 *
 * @example
 * const roots = new DataRoots(['/data/world-models']).with([bundledAssetsDir]);
 * const dir = roots.resolve('model_dir', 'evac-512', 'dir'); // '/data/world-models/evac-512'
 * const file = roots.confine('model_dir', join(dir, 'world_model.onnx'));
 */
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';

import type { Logger } from 'pino';

import { InvalidKwargsError } from './kwargs-error.ts';

/** A path kwarg that is refused: outside the roots, missing, or data that does not load. */
export class DataPathError extends InvalidKwargsError {
  override readonly name: string = 'DataPathError';
  constructor(
    readonly kwarg: string,
    message: string,
  ) {
    super(`${kwarg}: ${message}`, [{ path: kwarg, message }]);
  }
}

/**
 * Where a loader may read: maps each path it is about to open to the path to open, or throws
 * ({@link DataRoots.confine} for data a client named; the identity for a trusted caller's).
 */
export type ConfinePath = (path: string) => string;

const OUTSIDE =
  'the path is outside the data roots this server allows (gymwire serve --data-root DIR); give a path relative to a data root, or an absolute one inside it';

export class DataRoots {
  /** Real paths of the roots. */
  private readonly real: readonly string[];

  /**
   * @param roots directories client paths may point into; each must exist (checked here, so a
   *   mistyped `--data-root` fails at start-up rather than at the first make).
   */
  constructor(readonly roots: readonly string[] = []) {
    this.real = roots.map((root) => {
      let real: string;
      try {
        real = realpathSync(root);
      } catch {
        throw new Error(`data root ${root} does not exist`);
      }
      if (!statSync(real).isDirectory()) throw new Error(`data root ${root} is not a directory`);
      return real;
    });
  }

  /** These roots plus more (an env family's bundled assets, which clients may always name). */
  with(more: readonly string[]): DataRoots {
    return new DataRoots([...this.roots, ...more]);
  }

  /**
   * The real path of a client-supplied `requested` path, which must lie inside a root. A relative
   * path is tried against each root in turn. Throws {@link DataPathError}.
   */
  resolve(kwarg: string, requested: string, kind: 'dir' | 'file'): string {
    if (requested.includes('\0')) throw new DataPathError(kwarg, OUTSIDE);
    const candidates = isAbsolute(requested) ? [resolve(requested)] : this.real.map((root) => resolve(root, requested));
    // Decided on the path as written before the filesystem is asked, so nothing outside is probed.
    const inside = candidates.filter((p) => this.contains(p) || this.roots.some((root) => within(resolve(root), p)));
    if (inside.length === 0) throw new DataPathError(kwarg, OUTSIDE);
    let escaped = false;
    for (const candidate of inside) {
      let real: string;
      try {
        real = realpathSync(candidate);
      } catch {
        continue;
      }
      if (!this.contains(real)) {
        escaped = true;
        continue;
      }
      const isDir = statSync(real).isDirectory();
      if (kind === 'dir' && !isDir) throw new DataPathError(kwarg, 'not a directory');
      if (kind === 'file' && isDir) throw new DataPathError(kwarg, 'a directory, not a file');
      return real;
    }
    throw new DataPathError(kwarg, escaped ? OUTSIDE : `no such ${kind === 'dir' ? 'directory' : 'file'} in the server's data roots`);
  }

  /**
   * The real path of `path`, named by data that `kwarg` pointed at (a manifest's file, a scene
   * file), which must lie inside a root too. Throws {@link DataPathError} without naming the path.
   */
  confine(kwarg: string, path: string): string {
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      // Which file is missing is told only when its folder lies inside a root (the author's own data).
      let parent: string | null = null;
      try {
        parent = realpathSync(dirname(path));
      } catch {
        /* a missing folder: no detail */
      }
      const which = parent !== null && this.contains(parent) ? ` (${basename(path)})` : '';
      throw new DataPathError(kwarg, `the data names a file that does not exist${which}`);
    }
    if (!this.contains(real)) throw new DataPathError(kwarg, 'the data names a file outside the data roots this server allows');
    return real;
  }

  private contains(path: string): boolean {
    return this.real.some((root) => within(root, path));
  }
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${sep}`));
}

/**
 * How a loader's failure over client-named data is reported. `dir`: the folder the client named,
 * resolved inside a data root. With it, the client is told the loader's reason (which file, which
 * input, what was expected, what was found: the author of data in a folder the operator allowed
 * needs it), with paths inside `dir` written relative to it and any other absolute path left out.
 * Loaders never quote a file's content in their reasons. Without it, a generic message.
 */
export interface ClientDataReport {
  dir?: string;
  log?: Logger;
}

/**
 * Runs a loader over data a client named with `kwarg`. When the data itself is at fault
 * (`isDataFault`: a bad manifest, a corrupt file), the client gets a {@link DataPathError} (with
 * the reason where `report.dir` is given, see {@link ClientDataReport}) and the server's log gets
 * the loader's own message. Other failures pass through unchanged.
 */
export async function loadClientData<T>(
  kwarg: string,
  what: string,
  load: () => Promise<T> | T,
  isDataFault: (err: unknown) => boolean,
  report: ClientDataReport = {},
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw clientDataFailure(kwarg, what, err, isDataFault, report.log, report.dir);
  }
}

/** What to throw when loading data a client named failed with `err` (for sync loaders; see {@link loadClientData}). */
export function clientDataFailure(kwarg: string, what: string, err: unknown, isDataFault: (err: unknown) => boolean, log?: Logger, dir?: string): unknown {
  if (err instanceof DataPathError || !isDataFault(err)) return err;
  log?.warn({ err, kwarg }, `client-named data does not load as ${what}`);
  if (dir !== undefined && err instanceof Error)
    return new DataPathError(kwarg, `the data there does not load as ${what}: ${reasonForClient(err.message, dir)}`);
  return new DataPathError(kwarg, `the data there does not load as ${what}; the server's log has the reason`);
}

/** `message` with paths inside `dir` made relative to it and every other absolute path left out. */
export function reasonForClient(message: string, dir: string): string {
  const inside = message
    .split(dir + sep)
    .join('')
    .split(dir)
    .join('.');
  return inside.replace(/(^|[\s'"(=:])\/[^\s'")]+/g, '$1<a path>');
}

/** Whether an error is a filesystem failure (ENOENT, EACCES, EISDIR...). */
export function isFsError(err: unknown): boolean {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}
