/**
 * Writes trajectory datasets in the format of docs/datasets.md: Arrow IPC part files of step rows,
 * an episodes table and a dataset.json manifest. Episodes are queued and encoded/written in the
 * background, one at a time; `ready()` is the backpressure point: it resolves once fewer than
 * `highWaterSteps` steps wait to be written, so a producer awaiting it never outruns the disk.
 *
 * @example
 * const writer = await TrajectoryWriter.create('out/', { envId, observationSpace, actionSpace });
 * await writer.ready();
 * writer.add(episode);
 * const manifest = await writer.close({ policy: 'random' });
 *
 * A failed write (a full disk, a vanished directory) stops the writer: `ready()` rejects, later
 * episodes are dropped, and `close()` removes the part file being written, writes the episodes
 * table and manifest for the finished parts (each stays readable) and rejects with a
 * {@link DatasetWriteError}.
 */
import { createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';

import { Binary, Bool, Field, Float64, Int32, Int64, makeData, RecordBatch, RecordBatchFileWriter, Schema, Struct, Utf8, vectorFromArray } from 'apache-arrow';
import type { DataType } from 'apache-arrow';

import type { Space } from '../../../protocol/spaces.ts';
import { Tensor } from '../../../protocol/tensor.ts';
import type { DType } from '../../../protocol/tensor.ts';
import type { ExtraRow } from '../policy.ts';
import { columnBuilder } from './builders.ts';
import type { ColumnBuilder } from './builders.ts';
import { encodeLeaf, encodeLeafSync, pick, planColumns } from './columns.ts';
import type { ColumnPlan, ImageFormat } from './columns.ts';
import { DATASET_FORMAT, DATASET_VERSION } from './format.ts';
import { toJsonText, toJsonValue } from './json.ts';

export { DATASET_FORMAT, DATASET_VERSION } from './format.ts';

export interface StepRecord {
  obs: unknown;
  action: unknown;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  logProb: number | null;
  value: number | null;
  info: Record<string, unknown>;
  /** Steps the session had taken in this rollout before this one. */
  sessionStep: number;
  /** The observation after the last step of an ended episode. */
  finalObs?: unknown;
  /** The policy's extra outputs for this step (PolicyOutput.extras), stored as `extras/<name>` columns. */
  extras?: Record<string, ExtraRow>;
}

export type EpisodeStatus = 'terminated' | 'truncated' | 'incomplete';

export interface EpisodeRecord {
  id: number;
  session: string;
  server: string;
  seed: number | null;
  status: EpisodeStatus;
  reason: string | null;
  steps: StepRecord[];
}

export interface WriterOptions {
  envId: string;
  envKwargs?: Record<string, unknown>;
  observationSpace: Space;
  actionSpace: Space;
  /** Store uint8 [H,W,C] observation leaves as PNG or JPEG instead of raw bytes. */
  images?: ImageFormat;
  /** Rows per steps file before a new one starts (default 100 000). */
  rowsPerFile?: number;
  /** Rows per Arrow record batch (default 4096). */
  rowsPerBatch?: number;
  /** `ready()` waits while more steps than this are queued (default 20 000). */
  highWaterSteps?: number;
  /**
   * Replace a dataset already in `dir` (its dataset files only; anything else there stays). Off by
   * default: `create` refuses such a directory rather than lose what it holds.
   */
  overwrite?: boolean;
}

/** The files a dataset directory holds (docs/datasets.md). */
const DATASET_FILE = /^(dataset\.json|episodes\.arrow|steps-\d+\.arrow)$/;

/**
 * Writing the dataset failed (e.g. ENOSPC). `kept` lists the finished steps files (readable, and in
 * the manifest when it could still be written); `removed` is the part file that was being written.
 */
export class DatasetWriteError extends Error {
  override readonly name = 'DatasetWriteError';
  constructor(
    message: string,
    readonly kept: string[],
    readonly removed: string | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `TrajectoryWriter.create` was pointed at a directory that already holds a dataset. */
export class DatasetExistsError extends Error {
  override readonly name = 'DatasetExistsError';
}

export interface DatasetManifest {
  format: string;
  version: number;
  env_id: string;
  env_kwargs: Record<string, unknown>;
  observation_space: unknown;
  action_space: unknown;
  policy: string;
  servers: string[];
  sessions: number;
  columns: Record<string, { encoding: string; dtype: string | null; shape: number[] }>;
  steps_files: string[];
  episodes_file: string;
  counts: { steps: number; episodes: number; terminated: number; truncated: number; incomplete: number; discarded: number };
  created_at: string;
}

interface Part {
  name: string;
  writer: RecordBatchFileWriter;
  out: WriteStream;
  pump: Promise<void>;
  rows: number;
}

interface EpisodeRow {
  episode_id: bigint;
  session: string;
  server: string;
  seed: bigint | null;
  steps: number;
  return: number;
  status: string;
  reason: string | null;
  file: string;
}

const MD = (col: ColumnPlan) =>
  new Map([
    ['gymwire.encoding', col.encoding],
    ['gymwire.dtype', col.dtype ?? ''],
    ['gymwire.shape', JSON.stringify(col.shape)],
  ]);

function leafType(col: ColumnPlan): DataType {
  if (col.encoding === 'scalar') return col.dtype?.startsWith('float') ? new Float64() : new Int64();
  if (col.encoding === 'json') return new Utf8();
  return new Binary();
}

/** A step's info as JSON text, without the final observation and info (columns of their own). */
function infoText(info: Record<string, unknown>): string {
  // Most envs' step infos are empty: skip the copy and the walk.
  let empty = true;
  for (const _ in info) {
    empty = false;
    break;
  }
  if (empty) return '{}';
  const { final_obs: _fo, final_info: _fi, ...rest } = info;
  return toJsonText(rest);
}

const TYPED_DTYPES: [new (...args: never[]) => ArrayBufferView, DType][] = [
  [Float32Array, 'float32'],
  [Float64Array, 'float64'],
  [Int8Array, 'int8'],
  [Int16Array, 'int16'],
  [Int32Array, 'int32'],
  [Uint8Array, 'uint8'],
  [Uint16Array, 'uint16'],
  [Uint32Array, 'uint32'],
];

/** An extra output's row as a Tensor: a number is a float64 scalar, a typed array a vector. */
function extraTensor(name: string, row: ExtraRow): Tensor {
  if (row instanceof Tensor) return row;
  if (typeof row === 'number') return Tensor.from('float64', [], [row]);
  for (const [ctor, dtype] of TYPED_DTYPES) if (row instanceof ctor) return Tensor.from(dtype, [row.length], row as Float64Array);
  throw new TypeError(`extras.${name}: a row must be a number, a typed array or a Tensor, got ${typeof row}`);
}

/** Builds a record batch from named columns of plain JS values, in schema order. */
function toBatch(schema: Schema, columns: Record<string, unknown[]>, length: number): RecordBatch {
  const children = schema.fields.map((f) => vectorFromArray(columns[f.name]!, f.type).data[0]!);
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }));
}

export class TrajectoryWriter {
  private readonly obsCols: ColumnPlan[];
  private readonly actCols: ColumnPlan[];
  /** Planned from the first episode written (one raw column per extra output), then fixed. */
  private extraCols: ColumnPlan[] | null = null;
  private schemaNow: Schema;
  private readonly queue: EpisodeRecord[] = [];
  private queuedSteps = 0;
  private draining: Promise<void> | null = null;
  private readonly waiters: (() => void)[] = [];
  private part: Part | null = null;
  private readonly files: string[] = [];
  /** The step rows not yet in a record batch, one builder per schema field. */
  private readonly builders: Record<string, ColumnBuilder> = {};
  private bufferRows = 0;
  private readonly episodes: EpisodeRow[] = [];
  private readonly counts = { steps: 0, episodes: 0, terminated: 0, truncated: 0, incomplete: 0, discarded: 0 };
  private failure: Error | null = null;
  private readonly servers = new Set<string>();
  private readonly sessions = new Set<string>();

  private constructor(
    readonly dir: string,
    private readonly opts: WriterOptions,
  ) {
    this.obsCols = planColumns(opts.observationSpace, opts.images ?? 'raw');
    this.actCols = planColumns(opts.actionSpace, 'raw');
    this.schemaNow = this.makeSchema([]);
    this.builders = Object.fromEntries(this.schemaNow.fields.map((f) => [f.name, columnBuilder(f.type)]));
  }

  /** The steps files' schema (extras columns join it with the first episode written). */
  get schema(): Schema {
    return this.schemaNow;
  }

  private makeSchema(extraCols: ColumnPlan[]): Schema {
    const { opts } = this;
    const leaf = (prefix: string, col: ColumnPlan) => new Field(`${prefix}${col.path}`, leafType(col), true, MD(col));
    return new Schema(
      [
        new Field('episode_id', new Int64(), false),
        new Field('step', new Int32(), false),
        new Field('session', new Utf8(), false),
        new Field('server', new Utf8(), false),
        new Field('session_step', new Int64(), false),
        ...this.obsCols.map((c) => leaf('obs', c)),
        ...this.obsCols.map((c) => leaf('final_obs', c)),
        ...this.actCols.map((c) => leaf('action', c)),
        new Field('reward', new Float64(), false),
        new Field('terminated', new Bool(), false),
        new Field('truncated', new Bool(), false),
        new Field('log_prob', new Float64(), true),
        new Field('value', new Float64(), true),
        new Field('info', new Utf8(), false, new Map([['gymwire.encoding', 'json']])),
        ...extraCols.map((c) => leaf('extras', c)),
      ],
      new Map([
        ['gymwire.format', DATASET_FORMAT],
        ['gymwire.version', String(DATASET_VERSION)],
        ['gymwire.env_id', opts.envId],
        ['gymwire.observation_space', toJsonText(opts.observationSpace)],
        ['gymwire.action_space', toJsonText(opts.actionSpace)],
      ]),
    );
  }

  /** Fixes the extras columns from the first episode; later steps must have the same names. */
  private planExtras(ep: EpisodeRecord): ColumnPlan[] {
    if (this.extraCols === null) {
      const first = ep.steps[0]?.extras ?? {};
      this.extraCols = Object.entries(first).map(([name, row]) => {
        const t = extraTensor(name, row);
        return { path: `/${name}`, keys: [name], encoding: 'raw', dtype: t.dtype, shape: [...t.shape] };
      });
      if (this.extraCols.length > 0) {
        this.schemaNow = this.makeSchema(this.extraCols);
        for (const c of this.extraCols) this.builders[`extras${c.path}`] = columnBuilder(this.schemaNow.fields.find((f) => f.name === `extras${c.path}`)!.type);
      }
    }
    const names = this.extraCols.map((c) => c.keys[0] as string);
    for (const s of ep.steps) {
      const got = Object.keys(s.extras ?? {});
      if (got.length !== names.length || !names.every((n) => s.extras![n] !== undefined))
        throw new TypeError(`a step's extras [${got.join(', ')}] differ from the dataset's [${names.join(', ')}] (fixed by the first episode written)`);
    }
    return this.extraCols;
  }

  /** Opens `dir` (made if missing) for a new dataset; refuses one that holds a dataset already unless `overwrite`. */
  static async create(dir: string, opts: WriterOptions): Promise<TrajectoryWriter> {
    await mkdir(dir, { recursive: true });
    const existing = (await readdir(dir)).filter((f) => DATASET_FILE.test(f)).sort();
    if (existing.length > 0) {
      if (!opts.overwrite) {
        const listed = existing.length > 3 ? `${existing.slice(0, 3).join(', ')} and ${existing.length - 3} more` : existing.join(', ');
        throw new DatasetExistsError(`${dir} already holds a dataset (${listed}); write elsewhere, or replace it with overwrite (gymwire rollout --overwrite)`);
      }
      // Every old part goes, so a shorter new dataset leaves no stale steps files behind.
      await Promise.all(existing.map((f) => rm(join(dir, f))));
    }
    return new TrajectoryWriter(dir, opts);
  }

  /** Steps queued and not yet written. */
  get pendingSteps(): number {
    return this.queuedSteps;
  }

  /** Resolves when the queue is below the high-water mark; rejects once a write has failed. */
  ready(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.queuedSteps < (this.opts.highWaterSteps ?? 20_000)) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push(() => (this.failure ? reject(this.failure) : resolve())));
  }

  /** Queues an episode; its rows are written contiguously. After a failed write it is dropped (close() reports the failure). */
  add(ep: EpisodeRecord): void {
    if (this.failure) return;
    this.queue.push(ep);
    this.queuedSteps += ep.steps.length;
    this.draining ??= this.drain().finally(() => (this.draining = null));
  }

  /** Counts an episode that was dropped on purpose (a partial episode discarded at stop). */
  discarded(count = 1): void {
    this.counts.discarded += count;
  }

  /** Writes what is queued, the episodes table and dataset.json; returns the manifest. */
  async close(meta: { policy: string; servers?: string[]; sessions?: number }): Promise<DatasetManifest> {
    while (this.draining) await this.draining;
    if (!this.failure) {
      try {
        await this.flushBuffer();
        if (this.files.length === 0) this.startPart(); // an empty steps file still carries the schema
        await this.finishPart();
      } catch (err) {
        this.fail(err);
      }
    }
    if (this.failure) return this.closeAfterFailure(this.failure, meta);
    return this.writeTables(meta);
  }

  /** Removes the part being written, keeps the finished ones readable and listed, then rejects. */
  private async closeAfterFailure(failure: Error, meta: { policy: string; servers?: string[]; sessions?: number }): Promise<never> {
    const broken = this.part;
    this.part = null;
    if (broken) {
      broken.out.destroy();
      // Finishing the Arrow writer ends the pump's wait for its next chunk (the pump then stops at the failure).
      try {
        broken.writer.finish();
      } catch {
        // already finished
      }
      await broken.pump.catch(() => {});
      await rm(join(this.dir, broken.name), { force: true }).catch(() => {});
      this.files.splice(this.files.indexOf(broken.name), 1);
      // Its episodes went with it: the table and the counts describe only what is on disk.
      for (let i = this.episodes.length - 1; i >= 0; i--) {
        const e = this.episodes[i]!;
        if (e.file !== broken.name) continue;
        this.episodes.splice(i, 1);
        this.counts.steps -= e.steps;
        this.counts.episodes -= 1;
        this.counts[e.status as EpisodeStatus] -= 1;
      }
    }
    let tables = 'the episodes table and dataset.json list them';
    if (this.files.length > 0) {
      try {
        await this.writeTables(meta);
      } catch (err) {
        tables = `the episodes table and dataset.json could not be written either (${(err as Error).message})`;
      }
    } else tables = 'no steps file was finished, so no dataset was written';
    const kept = [...this.files];
    throw new DatasetWriteError(
      `writing the dataset in ${this.dir} failed: ${failure.message}; ${kept.length} finished steps file(s) kept (${this.counts.episodes} episodes), ${tables}${broken ? `; the unfinished ${broken.name} was removed` : ''}`,
      kept,
      broken?.name ?? null,
      { cause: failure },
    );
  }

  /** Writes the episodes table and dataset.json for the steps files written so far. */
  private async writeTables(meta: { policy: string; servers?: string[]; sessions?: number }): Promise<DatasetManifest> {
    const epSchema = new Schema([
      new Field('episode_id', new Int64(), false),
      new Field('session', new Utf8(), false),
      new Field('server', new Utf8(), false),
      new Field('seed', new Int64(), true),
      new Field('steps', new Int32(), false),
      new Field('return', new Float64(), false),
      new Field('status', new Utf8(), false),
      new Field('reason', new Utf8(), true),
      new Field('file', new Utf8(), false),
    ]);
    const cols: Record<string, unknown[]> = Object.fromEntries(epSchema.fields.map((f) => [f.name, this.episodes.map((e) => e[f.name as keyof EpisodeRow])]));
    const epWriter = new RecordBatchFileWriter();
    epWriter.reset(undefined, epSchema);
    if (this.episodes.length > 0) epWriter.write(toBatch(epSchema, cols, this.episodes.length));
    epWriter.finish();
    await writeFile(join(this.dir, 'episodes.arrow'), await epWriter.toUint8Array());
    const columns: DatasetManifest['columns'] = {};
    for (const [prefix, list] of [
      ['obs', this.obsCols],
      ['action', this.actCols],
      ['extras', this.extraCols ?? []],
    ] as const) {
      for (const c of list) columns[`${prefix}${c.path}`] = { encoding: c.encoding, dtype: c.dtype, shape: [...c.shape] };
    }
    const manifest: DatasetManifest = {
      format: DATASET_FORMAT,
      version: DATASET_VERSION,
      env_id: this.opts.envId,
      env_kwargs: (toJsonValue(this.opts.envKwargs ?? {}) as Record<string, unknown>) ?? {},
      observation_space: toJsonValue(this.opts.observationSpace),
      action_space: toJsonValue(this.opts.actionSpace),
      policy: meta.policy,
      servers: meta.servers ?? [...this.servers],
      sessions: meta.sessions ?? this.sessions.size,
      columns,
      steps_files: this.files,
      episodes_file: 'episodes.arrow',
      counts: { ...this.counts },
      created_at: new Date().toISOString(),
    };
    await writeFile(join(this.dir, 'dataset.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    return manifest;
  }

  // -------------------------------------------------------------------------------------------

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        if (this.failure) {
          // Nothing more reaches the disk; close() reports why.
          this.queue.length = 0;
          this.queuedSteps = 0;
          break;
        }
        const ep = this.queue.shift()!;
        await this.writeEpisode(ep);
        this.queuedSteps -= ep.steps.length;
        this.wake();
      }
    } catch (err) {
      this.fail(err);
    }
  }

  /** Records the first failure and releases everyone waiting in ready(). */
  private fail(err: unknown): void {
    this.failure ??= err instanceof Error ? err : new Error(String(err));
    this.wake(true);
  }

  private wake(all = false): void {
    const limit = this.opts.highWaterSteps ?? 20_000;
    while (this.waiters.length > 0 && (all || this.queuedSteps < limit)) this.waiters.shift()!();
  }

  private async writeEpisode(ep: EpisodeRecord): Promise<void> {
    const rowsPerFile = this.opts.rowsPerFile ?? 100_000;
    if (this.part && this.part.rows + ep.steps.length > rowsPerFile && this.part.rows > 0) {
      await this.flushBuffer();
      await this.finishPart();
    }
    const extraCols = this.planExtras(ep);
    const part = this.part ?? this.startPart();
    const b = this.builders;
    const id = BigInt(ep.id);
    // Image leaves are encoded off the main thread (sharp), so only they are awaited.
    const leaf = (c: ColumnPlan, v: unknown) => (c.encoding === 'png' || c.encoding === 'jpeg' ? encodeLeaf(c, v) : encodeLeafSync(c, v));
    let ret = 0;
    for (let t = 0; t < ep.steps.length; t++) {
      const s = ep.steps[t]!;
      ret += s.reward;
      b['episode_id']!.push(id);
      b['step']!.push(t);
      b['session']!.push(ep.session);
      b['server']!.push(ep.server);
      b['session_step']!.push(s.sessionStep);
      for (const c of this.obsCols) {
        const o = leaf(c, pick(s.obs, c.keys));
        b[`obs${c.path}`]!.push(o instanceof Promise ? await o : o);
        const f = s.finalObs === undefined ? null : leaf(c, pick(s.finalObs, c.keys));
        b[`final_obs${c.path}`]!.push(f instanceof Promise ? await f : f);
      }
      for (const c of this.actCols) b[`action${c.path}`]!.push(encodeLeafSync(c, pick(s.action, c.keys)));
      b['reward']!.push(s.reward);
      b['terminated']!.push(s.terminated);
      b['truncated']!.push(s.truncated);
      b['log_prob']!.push(s.logProb);
      b['value']!.push(s.value);
      b['info']!.push(infoText(s.info));
      for (const c of extraCols) b[`extras${c.path}`]!.push(encodeLeafSync(c, extraTensor(c.keys[0] as string, s.extras![c.keys[0] as string]!)));
    }
    this.bufferRows += ep.steps.length;
    part.rows += ep.steps.length;
    this.episodes.push({
      episode_id: BigInt(ep.id),
      session: ep.session,
      server: ep.server,
      seed: ep.seed === null ? null : BigInt(ep.seed),
      steps: ep.steps.length,
      return: ret,
      status: ep.status,
      reason: ep.reason,
      file: part.name,
    });
    this.counts.steps += ep.steps.length;
    this.counts.episodes += 1;
    this.counts[ep.status] += 1;
    this.servers.add(ep.server);
    this.sessions.add(ep.session);
    if (this.bufferRows >= (this.opts.rowsPerBatch ?? 4096)) await this.flushBuffer();
  }

  private startPart(): Part {
    const name = `steps-${String(this.files.length).padStart(5, '0')}.arrow`;
    this.files.push(name);
    const writer = new RecordBatchFileWriter();
    writer.reset(undefined, this.schema);
    const out = createWriteStream(join(this.dir, name));
    // A write error may come while the pump waits for the next chunk: record it at once (no
    // 'error' listener would crash the process) and let the pump end instead of waiting forever.
    const broken = new Promise<never>((_, reject) => out.once('error', reject));
    broken.catch((err: unknown) => this.fail(err));
    const pump = (async () => {
      for await (const chunk of writer) {
        if (this.failure) return;
        if (!out.write(chunk)) await Promise.race([once(out, 'drain'), broken]);
      }
      out.end();
      await Promise.race([once(out, 'finish'), broken]);
    })();
    // Its failure is reported through this.failure (ready(), close()), never as an unhandled rejection.
    pump.catch((err: unknown) => this.fail(err));
    this.part = { name, writer, out, pump, rows: 0 };
    return this.part;
  }

  private async flushBuffer(): Promise<void> {
    if (this.bufferRows === 0 || !this.part) return;
    const children = this.schema.fields.map((f) => this.builders[f.name]!.finish());
    this.part.writer.write(new RecordBatch(this.schema, makeData({ type: new Struct(this.schema.fields), length: this.bufferRows, nullCount: 0, children })));
    this.bufferRows = 0;
    // Let the pump hand the batch to the file stream before more rows accumulate.
    await new Promise((r) => setImmediate(r));
  }

  private async finishPart(): Promise<void> {
    const part = this.part;
    if (!part) return;
    part.writer.finish();
    await part.pump;
    if (this.failure) throw this.failure;
    // Only a part whose every byte reached the file stops being the one a failure removes.
    this.part = null;
  }
}
