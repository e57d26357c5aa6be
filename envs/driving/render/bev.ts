/**
 * A bird's-eye-view semantic raster centred on the ego (x forward = image up, y left = image left):
 * uint8 [H, W, C] with one 0/255 channel per class — drivable area, lane markings, crosswalks,
 * vehicles, pedestrians, bicycles, static objects, ego. Same map grid as the cameras.
 *
 * @example
 * const bev = renderBev({ grid, ego, boxes }, { size: 128, resolution: 0.5 }); // 64 m x 64 m
 */
import { boxCorners } from '../geometry.ts';
import type { RenderBox, RenderInput } from './camera.ts';
import { SEM } from './grid.ts';

export const BEV_CHANNELS = ['drivable', 'marking', 'crosswalk', 'vehicle', 'pedestrian', 'bicycle', 'static_object', 'ego'] as const;

export interface BevOptions {
  /** Pixels per side. */
  size?: number;
  /** Metres per pixel. */
  resolution?: number;
}

function channelOf(b: RenderBox): number {
  switch (b.type) {
    case 'vehicle':
      return 3;
    case 'pedestrian':
      return 4;
    case 'bicycle':
      return 5;
    case 'ego':
      return 7;
    default:
      return 6;
  }
}

/** Renders the BEV raster; returns `{ data, shape }` with shape [size, size, channels]. */
export function renderBev(input: RenderInput, opts: BevOptions = {}): { data: Uint8Array; shape: [number, number, number] } {
  const N = opts.size ?? 128;
  const res = opts.resolution ?? 0.5;
  const C = BEV_CHANNELS.length;
  const data = new Uint8Array(N * N * C);
  const { ego, grid } = input;
  const c = Math.cos(ego.heading),
    s = Math.sin(ego.heading);
  for (let r = 0; r < N; r++) {
    const fx = (N / 2 - r - 0.5) * res; // forward
    for (let col = 0; col < N; col++) {
      const ly = (N / 2 - col - 0.5) * res; // left
      const cls = grid.classAt(ego.x + c * fx - s * ly, ego.y + s * fx + c * ly);
      const o = (r * N + col) * C;
      if (cls !== SEM.OFFROAD) data[o] = 255;
      if (cls === SEM.MARKING || cls === SEM.STOP_LINE) data[o + 1] = 255;
      if (cls === SEM.CROSSWALK) data[o + 2] = 255;
    }
  }
  const corners = new Float64Array(8);
  const px: number[] = [];
  for (const b of input.boxes) {
    boxCorners(b, corners);
    px.length = 0;
    for (let k = 0; k < 4; k++) {
      const dx = (corners[2 * k] as number) - ego.x,
        dy = (corners[2 * k + 1] as number) - ego.y;
      const fx = c * dx + s * dy,
        ly = -s * dx + c * dy;
      px.push(N / 2 - ly / res, N / 2 - fx / res); // (col, row)
    }
    fillChannel(data, N, C, channelOf(b), px);
  }
  return { data, shape: [N, N, C] };
}

function fillChannel(data: Uint8Array, N: number, C: number, ch: number, poly: number[]): void {
  let minY = Infinity,
    maxY = -Infinity;
  for (let i = 1; i < poly.length; i += 2) {
    minY = Math.min(minY, poly[i] as number);
    maxY = Math.max(maxY, poly[i] as number);
  }
  const n = poly.length >> 1;
  for (let y = Math.max(0, Math.ceil(minY - 0.5)); y <= Math.min(N - 1, Math.floor(maxY - 0.5)); y++) {
    const sy = y + 0.5;
    let xl = Infinity,
      xr = -Infinity;
    for (let i = 0, j = n - 1; i < n; j = i++) {
      const ay = poly[2 * j + 1] as number,
        by = poly[2 * i + 1] as number;
      if ((ay <= sy && by > sy) || (by <= sy && ay > sy)) {
        const x = (poly[2 * j] as number) + ((sy - ay) * ((poly[2 * i] as number) - (poly[2 * j] as number))) / (by - ay);
        xl = Math.min(xl, x);
        xr = Math.max(xr, x);
      }
    }
    for (let x = Math.max(0, Math.ceil(xl - 0.5)); x <= Math.min(N - 1, Math.floor(xr - 0.5)); x++) data[(y * N + x) * C + ch] = 255;
  }
}
