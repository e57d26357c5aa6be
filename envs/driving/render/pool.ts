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
import type { Worker } from 'node:worker_threads';

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
}

class RenderThread {
  rigs = 0;
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, { resolve(images: Uint8Array[]): void; reject(err: Error): void }>();
  private nextId = 1;

  post(msg: RenderRequest): void {
    this.ensure().postMessage(msg);
  }

  render(msg: Omit<Extract<RenderRequest, { type: 'render' }>, 'id'>): Promise<Uint8Array[]> {
    const worker = this.ensure();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...msg, id });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.failAll(new Error('the render pool is closed'));
    if (worker) await worker.terminate();
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const worker = startModuleWorker(new URL('./worker.ts', import.meta.url), import.meta.url);
    worker.unref();
    worker.on('message', (res: RenderResponse) => {
      const w = this.waiting.get(res.id);
      this.waiting.delete(res.id);
      if (this.waiting.size === 0) worker.unref();
      if (!w) return;
      if (res.ok) w.resolve(res.images);
      else w.reject(new Error(`camera rendering failed: ${res.error}`));
    });
    worker.on('error', (err) => this.failAll(err));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      // Its rigs are gone with it: renders fail from now on (each session's own fault, not the server's).
      this.worker = null;
      this.failAll(new Error(`render thread exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}

export class RenderPool {
  private readonly threads: RenderThread[];
  private nextRigId = 1;
  private closed = false;

  constructor(opts: RenderPoolOptions = {}) {
    const n = opts.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
    this.threads = Array.from({ length: n }, () => new RenderThread());
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

  /** @internal Made by RenderPool.rig. */
  constructor(
    private readonly thread: RenderThread,
    private readonly rigId: number,
    readonly cameras: readonly CameraSpec[],
  ) {
    thread.rigs++;
    thread.post({ type: 'rig', rigId, cameras: [...cameras] });
  }

  /** Renders every camera (or only camera `only`); each image is uint8 [height, width, 3]. */
  render(input: RenderInput, only?: number): Promise<Uint8Array[]> {
    if (this.closed) return Promise.reject(new Error('this camera rig is closed'));
    return this.thread.render({
      type: 'render',
      rigId: this.rigId,
      gridId: this.gridId(input.grid),
      ego: { x: input.ego.x, y: input.ego.y, heading: input.ego.heading },
      boxes: input.boxes.map((b) => ({ ...b })),
      ...(only === undefined ? {} : { only }),
    });
  }

  /** Frees the rig's memory on its thread. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.thread.rigs--;
    this.thread.post({ type: 'drop', rigId: this.rigId });
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
