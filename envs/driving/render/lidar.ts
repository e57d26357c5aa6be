/**
 * LiDAR by ray casting against the flat ground and the boxes (slab test in each box's frame).
 * Returns NAVSIM's layout: float32 [6, n] with rows x, y, z, intensity, ring, lidar_id in the ego
 * frame (z from the ground). Rays that hit nothing within range are dropped.
 *
 * @example
 * const { data, n } = castLidar({ grid, ego, boxes }, { channels: 32, azimuthSteps: 360 });
 */
import type { RenderInput } from './camera.ts';
import { SEM } from './grid.ts';

export interface LidarOptions {
  channels?: number;
  azimuthSteps?: number;
  /** Mount in the ego frame. */
  x?: number;
  y?: number;
  z?: number;
  range?: number;
  /** Elevation span in degrees, [lowest, highest]. */
  elevationDeg?: [number, number];
}

const INTENSITY: Record<number, number> = {
  [SEM.OFFROAD]: 0.1,
  [SEM.ROAD]: 0.2,
  [SEM.MARKING]: 0.9,
  [SEM.CROSSWALK]: 0.8,
  [SEM.STOP_LINE]: 0.9,
  [SEM.INTERSECTION]: 0.2,
};

/** Casts the beams; `data` is row-major [6, n]. */
export function castLidar(input: RenderInput, opts: LidarOptions = {}): { data: Float32Array; n: number } {
  const channels = opts.channels ?? 32;
  const steps = opts.azimuthSteps ?? 360;
  const mx = opts.x ?? 1.0,
    my = opts.y ?? 0,
    mz = opts.z ?? 1.9;
  const range = opts.range ?? 80;
  const [eLo, eHi] = opts.elevationDeg ?? [-25, 5];
  const { ego, grid } = input;
  const ch = Math.cos(ego.heading),
    sh = Math.sin(ego.heading);
  // Boxes in the ego frame, relative to the sensor.
  const boxes = input.boxes
    .filter((b) => b.type !== 'ego')
    .map((b) => {
      const dx = b.x - ego.x,
        dy = b.y - ego.y;
      const bx = ch * dx + sh * dy - mx,
        by = -sh * dx + ch * dy - my;
      return { bx, by, h: b.heading - ego.heading, hl: b.length / 2, hw: b.width / 2, top: b.height, r: Math.hypot(bx, by) };
    })
    .filter((b) => b.r < range + 5);
  const xs: number[] = [],
    ys: number[] = [],
    zs: number[] = [],
    it: number[] = [],
    ring: number[] = [];
  for (let a = 0; a < steps; a++) {
    const az = (a / steps) * 2 * Math.PI;
    const ca = Math.cos(az),
      sa = Math.sin(az);
    for (let e = 0; e < channels; e++) {
      const el = ((eLo + ((eHi - eLo) * e) / Math.max(1, channels - 1)) * Math.PI) / 180;
      const dz = Math.sin(el),
        dh = Math.cos(el);
      const dx = dh * ca,
        dy = dh * sa;
      let tBest = range;
      let hitBox = false;
      if (dz < 0) tBest = Math.min(tBest, mz / -dz);
      for (const b of boxes) {
        const cb = Math.cos(b.h),
          sb = Math.sin(b.h);
        // Ray origin and direction in the box frame (origin = sensor at -b.bx, -b.by, mz).
        const ox = cb * -b.bx + sb * -b.by,
          oy = -sb * -b.bx + cb * -b.by;
        const rx = cb * dx + sb * dy,
          ry = -sb * dx + cb * dy;
        let t0 = 0,
          t1 = tBest;
        const slab = (o: number, d: number, lo: number, hi: number): boolean => {
          if (Math.abs(d) < 1e-12) return o >= lo && o <= hi;
          let ta = (lo - o) / d,
            tb = (hi - o) / d;
          if (ta > tb) {
            const t = ta;
            ta = tb;
            tb = t;
          }
          t0 = Math.max(t0, ta);
          t1 = Math.min(t1, tb);
          return t0 <= t1;
        };
        if (slab(ox, rx, -b.hl, b.hl) && slab(oy, ry, -b.hw, b.hw) && slab(mz, dz, 0, b.top) && t0 < tBest) {
          tBest = t0;
          hitBox = true;
        }
      }
      if (tBest >= range) continue;
      const px = mx + tBest * dx,
        py = my + tBest * dy,
        pz = mz + tBest * dz;
      xs.push(px);
      ys.push(py);
      zs.push(pz);
      it.push(hitBox ? 0.5 : (INTENSITY[grid.classAt(ego.x + ch * px - sh * py, ego.y + sh * px + ch * py)] ?? 0.1));
      ring.push(e);
    }
  }
  const n = xs.length;
  const data = new Float32Array(6 * n);
  data.set(xs, 0);
  data.set(ys, n);
  data.set(zs, 2 * n);
  data.set(it, 3 * n);
  data.set(ring, 4 * n);
  return { data, n };
}
