/**
 * A render thread of a {@link RenderPool}: it holds the prepared cameras of the rigs assigned to it
 * (their per-pixel ground rays, the memory and time a large rig costs) and the map rasters they
 * draw, and renders whole rigs on request, handing the images back without a copy. Messages are
 * handled in order, so a rig's `rig` and `grid` always precede its first `render`.
 */
import { parentPort } from 'node:worker_threads';

import { CameraRig } from './camera.ts';
import { SemanticGrid } from './grid.ts';
import type { RenderRequest, RenderResponse } from './pool.ts';

interface HeldRig {
  rig: CameraRig | null;
  /** Why the rig could not be prepared (reported by its renders). */
  failure: string | null;
  grids: Map<number, SemanticGrid>;
}

const rigs = new Map<number, HeldRig>();
const port = parentPort!;

function reply(res: RenderResponse, transfer: ArrayBuffer[] = []): void {
  port.postMessage(res, transfer);
}

port.on('message', (msg: RenderRequest) => {
  switch (msg.type) {
    case 'rig': {
      let held: HeldRig;
      try {
        held = { rig: new CameraRig(msg.cameras), failure: null, grids: new Map() };
      } catch (err) {
        held = { rig: null, failure: err instanceof Error ? err.message : String(err), grids: new Map() };
      }
      rigs.set(msg.rigId, held);
      return;
    }
    case 'grid': {
      const held = rigs.get(msg.rigId);
      if (!held) return;
      const grid = new SemanticGrid(msg.originX, msg.originY, msg.cell, msg.width, msg.height);
      grid.data.set(msg.data);
      held.grids.set(msg.gridId, grid);
      return;
    }
    case 'render': {
      const held = rigs.get(msg.rigId);
      const grid = held?.grids.get(msg.gridId);
      if (!held?.rig || !grid) {
        reply({ id: msg.id, ok: false, error: held?.failure ?? `render thread has no rig ${msg.rigId} or grid ${msg.gridId}` });
        return;
      }
      try {
        const input = { grid, ego: msg.ego, boxes: msg.boxes };
        const images = msg.only === undefined ? held.rig.render(input) : [held.rig.renderOne(msg.only, input)];
        reply(
          { id: msg.id, ok: true, images },
          images.map((i) => i.buffer as ArrayBuffer),
        );
      } catch (err) {
        reply({ id: msg.id, ok: false, error: err instanceof Error ? err.message : String(err) });
      }
      return;
    }
    case 'drop':
      rigs.delete(msg.rigId);
      return;
  }
});
