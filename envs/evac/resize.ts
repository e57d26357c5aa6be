/**
 * RLinf's reset-frame convention (world_model_evac_env.py @bf41fc33c, lines 286-308 and 774-799):
 * the frame becomes float32 in [0, 1] (`uint8 / 255`), is resized with
 * `F.interpolate(mode='bilinear', align_corners=False)` (no antialiasing) when its size differs,
 * normalised to [-1, 1], and observed as `((x + 1) / 2 * 255).clamp(0, 255).to(uint8)`, which
 * truncates. Each step is done in float32 as PyTorch's CPU kernel does it, so the uint8 frame is
 * the one RLinf's first observation shows. sharp's resize (the default) filters differently.
 *
 * @example
 * const frame = resizeLikeRLinf(rgb, 480, 640, 256, 256); // uint8 [256,256,3]
 */
const f = Math.fround;

/** Source indices and weights along one axis, as PyTorch's `compute_indices_weights_linear`. */
function axis(inSize: number, outSize: number): { i0: Int32Array; i1: Int32Array; l0: Float32Array; l1: Float32Array } {
  const scale = f(inSize / outSize);
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize);
  const l1 = new Float32Array(outSize);
  for (let d = 0; d < outSize; d++) {
    // area_pixel_compute_source_index for linear modes: scale * (d + 0.5) - 0.5, clamped at 0.
    const src = Math.max(f(f(scale * f(d + 0.5)) - 0.5), 0);
    const lo = Math.floor(src);
    i0[d] = lo;
    i1[d] = lo + (lo < inSize - 1 ? 1 : 0);
    l1[d] = f(src - lo);
    l0[d] = f(1 - l1[d]!);
  }
  return { i0, i1, l0, l1 };
}

/** Bilinear resize (align_corners=False) of float32 HWC data, in float32. */
export function bilinearLikeTorch(src: Float32Array, h: number, w: number, channels: number, outH: number, outW: number): Float32Array {
  const ys = axis(h, outH);
  const xs = axis(w, outW);
  const out = new Float32Array(outH * outW * channels);
  for (let y = 0; y < outH; y++) {
    const r0 = ys.i0[y]! * w;
    const r1 = ys.i1[y]! * w;
    const h0 = ys.l0[y]!;
    const h1 = ys.l1[y]!;
    for (let x = 0; x < outW; x++) {
      const w0 = xs.l0[x]!;
      const w1 = xs.l1[x]!;
      for (let c = 0; c < channels; c++) {
        const at = (row: number, col: number) => src[(row + col) * channels + c]!;
        const top = f(f(w0 * at(r0, xs.i0[x]!)) + f(w1 * at(r0, xs.i1[x]!)));
        const bottom = f(f(w0 * at(r1, xs.i0[x]!)) + f(w1 * at(r1, xs.i1[x]!)));
        out[(y * outW + x) * channels + c] = f(f(h0 * top) + f(h1 * bottom));
      }
    }
  }
  return out;
}

/** A uint8 RGB frame [h,w,3] as RLinf's first observation shows it at outH x outW (see the module comment). */
export function resizeLikeRLinf(rgb: Uint8Array, h: number, w: number, outH: number, outW: number): Uint8Array {
  let x: Float32Array = new Float32Array(rgb.length);
  for (let i = 0; i < rgb.length; i++) x[i] = f(rgb[i]! / 255);
  if (h !== outH || w !== outW) x = bilinearLikeTorch(x, h, w, 3, outH, outW);
  const out = new Uint8Array(outH * outW * 3);
  for (let i = 0; i < out.length; i++) {
    const normalised = f(f(x[i]! - 0.5) / 0.5);
    const observed = f(f(f(normalised + 1) / 2) * 255);
    out[i] = Math.trunc(Math.min(255, Math.max(0, observed)));
  }
  return out;
}
