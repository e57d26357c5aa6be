/**
 * Camera rendering off the event loop: a pool of render threads, each holding the prepared rigs
 * assigned to it. A large rig's preparation (a ground ray per pixel) and every frame's per-pixel
 * work run there, so a session with six 3200x1800 cameras leaves the main thread free to answer
 * other clients. Rendering is a pure function of the rig, the map raster and the scene, so pooled
 * images are byte-for-byte those a {@link CameraRig} on the main thread draws.
 *
 * The pool belongs to whoever registers the envs that use it (the registry closes it); threads
 * start with the first rig and are unreferenced while idle, so they never keep a process alive.
 *
 * @example
 * const pool = new RenderPool({ threads: 2 });
 * const rig = pool.rig(navsimCameras(1920, 1080));
 * const images = await rig.render({ grid, ego, boxes }); // Uint8Array per camera
 * rig.close();
 * await pool.close();
 */
import { availableParallelism } from 'node:os';

import { describeThrown } from '../../../runtime/channel.ts';
import { ThreadLink } from '../../../runtime/thread-link.ts';
import { startModuleWorker } from '../../core/threads.ts';
import type { Pose } from '../geometry.ts';
import type { CameraSpec, RenderBox, RenderInput } from './camera.ts';
import type { SemanticGrid } from './grid.ts';

/** @internal Messages to a render thread. */
export type RenderRequest =
  | { type: 'rig'; rigId: number; cameras: CameraSpec[] }
  | { type: 'grid'; rigId: number; gridId: number; originX: number; originY: number; cell: number; width: number; height: number; data: Uint8Array }
  | { type: 'render'; id: number; rigId: number; gridId: number; ego: Pose; boxes: RenderBox[]; only?: number }
  | { type: 'drop'; rigId: number };

/** @internal A render thread's answer to `render`. */
export type RenderResponse = { id: number; ok: true; images: Uint8Array[] } | { id: number; ok: false; error: string };

export interface RenderPoolOptions {
  /** Render threads (default: one per core but one, between 1 and 4). */
  threads?: number;
  /** How long one render may take (ms; default 5 min, a large rig's preparation included) before its thread is ended and its rigs are lost. */
  callTimeoutMs?: number;
}

/** How long one render may take by default (ms). */
export const DEFAULT_RENDER_TIMEOUT_MS = 300_000;

type RenderCall = Omit<Extract<RenderRequest, { type: 'render' }>, 'id'>;

class RenderThread {
  rigs = 0;
  /** The thread, its renders and their images (runtime/thread-link.ts); a rig lives on the thread it was prepared on. */
  private readonly link: ThreadLink<RenderCall>;

  constructor(
    callTimeoutMs: number,
    private readonly index: number,
  ) {
    this.link = new ThreadLink<RenderCall>({
      name: `render thread ${index}`,
      start: () => startModuleWorker(new URL('./worker.ts', import.meta.url), import.meta.url),
      send: (worker, id, body) => worker.postMessage({ ...body, id } satisfies RenderRequest),
      read: (message) => {
        const res = message as RenderResponse;
        if (typeof res !== 'object' || res === null || typeof res.id !== 'number') return 'garbage';
        return {
          id: res.id,
          outcome: res.ok === true ? { ok: true, value: res.images } : { ok: false, error: new Error(`camera rendering failed: ${describeThrown(res.error)}`) },
        };
      },
      deadlineMs: callTimeoutMs,
    });
  }

  /** Counts the threads lost: a rig prepared in an earlier generation is gone. */
  get generation(): number {
    return this.link.generation;
  }

  post(msg: RenderRequest): void {
    this.link.post(msg);
  }

  render(msg: RenderCall, generation: number): Promise<Uint8Array[]> {
    if (generation !== this.generation)
      return Promise.reject(new Error(`render thread ${this.index} was restarted after a render failed or hung; this camera rig is gone`));
    return this.link.request<Uint8Array[]>(msg, { what: 'render' });
  }

  close(): Promise<void> {
    return this.link.close('the render pool is closed');
  }
}

export class RenderPool {
  private readonly threads: RenderThread[];
  private nextRigId = 1;
  private closed = false;

  constructor(opts: RenderPoolOptions = {}) {
    const n = opts.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
    const timeout = opts.callTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
    this.threads = Array.from({ length: n }, (_, i) => new RenderThread(timeout, i));
  }

  /** A rig prepared on the least loaded thread; preparation starts now, off this thread. */
  rig(cameras: readonly CameraSpec[]): PooledCameraRig {
    if (this.closed) throw new Error('the render pool is closed');
    const thread = this.threads.reduce((a, b) => (b.rigs < a.rigs ? b : a));
    return new PooledCameraRig(thread, this.nextRigId++, cameras);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.close()));
  }
}

/** A camera rig whose preparation and frames run on a render thread. */
export class PooledCameraRig {
  private readonly grids = new WeakMap<SemanticGrid, number>();
  private nextGridId = 1;
  private closed = false;
  /** The thread's generation when this rig was prepared on it. */
  private readonly generation: number;

  /** @internal Made by RenderPool.rig. */
  constructor(
    private readonly thread: RenderThread,
    private readonly rigId: number,
    readonly cameras: readonly CameraSpec[],
  ) {
    thread.rigs++;
    thread.post({ type: 'rig', rigId, cameras: [...cameras] });
    this.generation = thread.generation;
  }

  /** Renders every camera (or only camera `only`); each image is uint8 [height, width, 3]. */
  render(input: RenderInput, only?: number): Promise<Uint8Array[]> {
    if (this.closed) return Promise.reject(new Error('this camera rig is closed'));
    return this.thread.render(
      {
        type: 'render',
        rigId: this.rigId,
        gridId: this.gridId(input.grid),
        ego: { x: input.ego.x, y: input.ego.y, heading: input.ego.heading },
        boxes: input.boxes.map((b) => ({ ...b })),
        ...(only === undefined ? {} : { only }),
      },
      this.generation,
    );
  }

  /** Frees the rig's memory on its thread. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.thread.rigs--;
    // A rig whose thread was lost is gone with it: nothing to drop (and no thread to start for it).
    if (this.generation === this.thread.generation) this.thread.post({ type: 'drop', rigId: this.rigId });
  }

  /** The id the thread knows `grid` by, sending it (a copy) the first time. Rasters never change once built. */
  private gridId(grid: SemanticGrid): number {
    let id = this.grids.get(grid);
    if (id !== undefined) return id;
    id = this.nextGridId++;
    this.grids.set(grid, id);
    this.thread.post({
      type: 'grid',
      rigId: this.rigId,
      gridId: id,
      originX: grid.originX,
      originY: grid.originY,
      cell: grid.cell,
      width: grid.width,
      height: grid.height,
      data: grid.data,
    });
    return id;
  }
}
