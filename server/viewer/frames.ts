/**
 * Images a viewer can show from a session's latest observation: every uint8 leaf shaped like a
 * camera ([H,W,3|4], or the newest frame of a [T,H,W,3|4] history) and every BEV-like raster
 * ([H,W,C] uint8 with C other than 3/4, one semantic channel per layer, colourised here).
 */
import sharp from 'sharp';

import { Tensor } from '../../protocol/tensor.ts';

export interface FrameRef {
  /** Dotted path of the leaf in the observation, e.g. `cameras.cam_f0`. */
  key: string;
  kind: 'camera' | 'bev';
  width: number;
  height: number;
}

/** A colour per semantic layer; later layers are drawn over earlier ones. */
const PALETTE: [number, number, number][] = [
  [60, 60, 60],
  [220, 220, 220],
  [250, 200, 60],
  [30, 144, 255],
  [255, 80, 80],
  [120, 220, 120],
  [170, 110, 60],
  [255, 255, 255],
  [200, 100, 255],
  [0, 200, 200],
];

function classify(t: Tensor): FrameRef['kind'] | null {
  if (t.dtype !== 'uint8') return null;
  const s = t.shape;
  if ((s.length === 3 || s.length === 4) && (s[s.length - 1] === 3 || s[s.length - 1] === 4)) return 'camera';
  if (s.length === 3 && s[0]! >= 16 && s[1]! >= 16 && s[2]! <= 16) return 'bev';
  return null;
}

function leaves(value: unknown, prefix: string, out: [string, Tensor][], depth = 0): void {
  if (value instanceof Tensor) out.push([prefix, value]);
  else if (value && typeof value === 'object' && !(value instanceof Uint8Array) && !Array.isArray(value) && depth < 4) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out, depth + 1);
  }
}

/** The frames an observation offers. */
export function listFrames(obs: unknown): FrameRef[] {
  const found: [string, Tensor][] = [];
  leaves(obs, '', found);
  return found.flatMap(([key, t]) => {
    const kind = classify(t);
    if (!kind) return [];
    const s = t.shape;
    const [height, width] = s.length === 4 ? [s[1]!, s[2]!] : [s[0]!, s[1]!];
    return [{ key: key || 'obs', kind, width, height }];
  });
}

/** RGB pixels of one frame (the newest of a history; a BEV colourised), or null when absent. */
export function frameRgb(obs: unknown, key: string): { data: Uint8Array; width: number; height: number; channels: 3 | 4 } | null {
  let v: unknown = obs;
  if (key !== 'obs') for (const k of key.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  if (!(v instanceof Tensor)) return null;
  const kind = classify(v);
  const data = v.data as Uint8Array;
  const s = v.shape;
  if (kind === 'camera') {
    const [t, h, w, c] = s.length === 4 ? [s[0]!, s[1]!, s[2]!, s[3]!] : [1, s[0]!, s[1]!, s[2]!];
    const per = h * w * c;
    return { data: data.subarray((t - 1) * per, t * per), width: w, height: h, channels: c as 3 | 4 };
  }
  if (kind === 'bev') {
    const [h, w, c] = [s[0]!, s[1]!, s[2]!];
    const rgb = new Uint8Array(h * w * 3);
    for (let p = 0; p < h * w; p++) {
      for (let ch = 0; ch < c; ch++) {
        if (data[p * c + ch]! > 127) {
          const col = PALETTE[ch % PALETTE.length]!;
          rgb[p * 3] = col[0];
          rgb[p * 3 + 1] = col[1];
          rgb[p * 3 + 2] = col[2];
        }
      }
    }
    return { data: rgb, width: w, height: h, channels: 3 };
  }
  return null;
}

export async function toPng(img: { data: Uint8Array; width: number; height: number; channels: 3 | 4 }): Promise<Buffer> {
  return sharp(Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength), {
    raw: { width: img.width, height: img.height, channels: img.channels },
  })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** Scalars and short lists of an info dict, for display (tensors summarised by dtype and shape). */
export function infoSummary(info: Record<string, unknown> | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info ?? {})) {
    if (typeof v === 'number') out[k] = Number.isFinite(v) ? v : String(v);
    else if (typeof v === 'string' || typeof v === 'boolean' || v === null) out[k] = v;
    else if (typeof v === 'bigint') out[k] = v.toString();
    else if (v instanceof Tensor) out[k] = v.size <= 8 ? v.toNumbers() : `${v.dtype}[${v.shape.join(', ')}]`;
    else if (v && typeof v === 'object' && !(v instanceof Uint8Array) && !Array.isArray(v)) {
      const inner = infoSummary(v as Record<string, unknown>);
      if (Object.keys(inner).length > 0 && Object.keys(inner).length <= 32) out[k] = inner;
    }
  }
  return out;
}
