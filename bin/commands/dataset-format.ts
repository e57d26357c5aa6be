/**
 * `gymwire rollout --format lerobot|minari`: the rollout collects into an Arrow dataset beside the
 * output (`OUT.gymwire-arrow`), then hands it to the Python SDK's writer (`python -m
 * gymwire.formats convert`), which writes the format through LeRobot's or Minari's own API, one
 * episode at a time, and the Arrow copy is removed. The Python is `GYMWIRE_PYTHON` or `python3`; it
 * is checked before any session is made, so a missing extra costs nothing.
 *
 * @example
 * const fmt = await prepareFormat('lerobot', 'data/cartpole', false); // throws, naming the pip extra, when Python lacks it
 * // ... collect into fmt.arrowDir ...
 * await fmt.finish({ fps: undefined, datasetId: undefined, overwrite: false, progress: true });
 */
import { spawn } from 'node:child_process';
import { readdir, rm } from 'node:fs/promises';

export const DATASET_FORMATS = ['arrow', 'lerobot', 'minari'] as const;
export type DatasetFormat = (typeof DATASET_FORMATS)[number];

/** The exit code `python -m gymwire.formats` gives when the format's library is not installed. */
const MISSING_EXTRA_EXIT = 3;

export class DatasetFormatError extends Error {
  override name = 'DatasetFormatError';
}

function python(): string {
  return process.env.GYMWIRE_PYTHON ?? 'python3';
}

/** What is kept of the helper's output: its stdout is one manifest line; its stderr only explains a failure. */
const OUTPUT_TAIL_CHARS = 64 * 1024;
/** The `check` step only looks packages up (nothing is imported): a Python that takes longer is stuck. */
const CHECK_TIMEOUT_MS = 60_000;

function runPython(
  args: string[],
  stderr: 'pipe' | 'inherit',
  timeoutMs?: number,
): Promise<{ code: number | null; stdout: string; stderr: string; missing: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(python(), ['-m', 'gymwire.formats', ...args], { stdio: ['ignore', 'pipe', stderr], ...(timeoutMs ? { timeout: timeoutMs } : {}) });
    let out = '';
    let err = '';
    child.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-OUTPUT_TAIL_CHARS)));
    child.stderr?.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-OUTPUT_TAIL_CHARS)));
    child.on('error', (e: NodeJS.ErrnoException) => resolve({ code: null, stdout: out, stderr: e.message, missing: e.code === 'ENOENT' }));
    child.on('close', (code) => resolve({ code, stdout: out, stderr: err, missing: false }));
  });
}

function extraHint(format: DatasetFormat): string {
  return `pip install 'gymwire[${format}]' into the Python that GYMWIRE_PYTHON names (now ${python()})`;
}

export interface FinishOptions {
  fps?: number;
  datasetId?: string;
  overwrite: boolean;
  progress: boolean;
}

export interface PreparedFormat {
  format: DatasetFormat;
  /** Where the rollout writes its Arrow dataset: OUT itself for arrow, OUT.gymwire-arrow otherwise. */
  arrowDir: string;
  /** Writes the format from the Arrow dataset and removes that (a no-op for arrow); returns the new manifest. */
  finish(opts: FinishOptions): Promise<Record<string, unknown> | null>;
}

/** Checks that this machine can write `format` into `out` before anything is collected. */
export async function prepareFormat(format: string, out: string, overwrite: boolean): Promise<PreparedFormat> {
  if (!(DATASET_FORMATS as readonly string[]).includes(format)) throw new DatasetFormatError(`--format must be ${DATASET_FORMATS.join(', ')}, got ${format}`);
  const fmt = format as DatasetFormat;
  if (fmt === 'arrow') return { format: fmt, arrowDir: out, finish: () => Promise.resolve(null) };
  const check = await runPython(['check', fmt], 'pipe', CHECK_TIMEOUT_MS);
  if (check.missing) throw new DatasetFormatError(`--format ${fmt} needs Python with gymwire's ${fmt} extra, and ${python()} was not found: ${extraHint(fmt)}`);
  if (check.code !== 0) {
    const why = check.code === MISSING_EXTRA_EXIT ? check.stderr.trim() : `gymwire.formats is not importable there (${check.stderr.trim().split('\n').pop()})`;
    throw new DatasetFormatError(`--format ${fmt}: ${why}; ${extraHint(fmt)}`);
  }
  const entries = await readdir(out).catch(() => [] as string[]);
  if (entries.length > 0 && !overwrite)
    throw new DatasetFormatError(`${out} is not empty; write a ${fmt} dataset into a new directory, or pass --overwrite to replace the ${fmt} dataset there`);
  const arrowDir = `${out}.gymwire-arrow`;
  return {
    format: fmt,
    arrowDir,
    async finish(opts) {
      const args = ['convert', '--format', fmt, arrowDir, out];
      if (opts.fps !== undefined) args.push('--fps', String(opts.fps));
      if (opts.datasetId !== undefined) args.push('--dataset-id', opts.datasetId);
      if (opts.overwrite) args.push('--overwrite');
      if (opts.progress) args.push('--progress');
      const r = await runPython(args, 'inherit');
      if (r.code !== 0) {
        throw new DatasetFormatError(
          `writing the ${fmt} dataset failed (exit ${r.code}); the collected episodes are kept as Arrow in ${arrowDir}: rerun ${python()} -m gymwire.formats ${args.join(' ')}`,
        );
      }
      await rm(arrowDir, { recursive: true, force: true });
      return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    },
  };
}
