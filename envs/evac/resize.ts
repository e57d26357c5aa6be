/**
 * RLinf's reset-frame convention (world_model_evac_env.py @bf41fc33c, lines 286-308 and 774-799;
 * world_model.py `_convert_frame_to_lerobot_format`), bit for bit as PyTorch's CPU kernels compute it.
 *
 * RLinf makes the frame `torch.from_numpy(hwc).permute(2, 0, 1).float() / 255` (a channels-last
 * float32 view), resizes it with `F.interpolate(mode='bilinear', align_corners=False)` (no
 * antialiasing) when its size differs, normalises it to [-1, 1] and observes
 * `((x + 1) / 2 * 255).clamp(0, 255).to(uint8)`, which truncates. PyTorch's CPU bilinear kernel
 * (aten/src/ATen/native/cpu/UpSampleKernel.cpp, `upsample_bilinear2d_kernel_impl_float`) takes one
 * of two paths for a 3-channel frame:
 * - the channels-last kernel (`cpu_upsample_linear_channels_last`) when the output's height plus
 *   width is at most 128, or when torch runs on one thread: four products with weights
 *   `h_lambda * w_lambda`, summed left to right;
 * - otherwise the separable generic kernel (`Interpolate<2, ..., 2>`): each row pair is blended
 *   along the width, then the two rows along the height.
 * x86-64 wheels compile those kernels (AVX2/AVX512 builds) with GCC, which fuses `a * b + c` into
 * one fused multiply-add, rounding once: the source index `scale * (d + 0.5) - 0.5`, and each sum
 * of products, whose first product is fused and the rest rounded. `fma32` reproduces that rounding,
 * so the frames here equal PyTorch's float32 bits (test/envs/evac/resize.test.ts checks fixtures
 * that PyTorch itself made). PyTorch's portable build (CPUs without AVX2) does not fuse:
 * `torchKernels: 'unfused'`. sharp's resize (the env's default) filters differently.
 *
 * @example
 * const frame = resizeLikeRLinf(rgb, 480, 640, 256, 256); // uint8 [256,256,3], PyTorch's bytes
 */
const f = Math.fround;

/**
 * `fmaf(a, b, c)` for float32 operands: `a * b + c` rounded once to float32. The product of two
 * float32 values is exact in a double, so rounding the double sum to float32 is already right unless
 * that sum lies exactly halfway between two float32 values; then the sum's own rounding error (the
 * exact tail a double could not hold) decides the side.
 */
export function fma32(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const r = f(s);
  if (r === s) return r;
  const d = s - r;
  const other = r + 2 * d; // the float32 value on s's other side, when s is halfway
  if (f(other) !== other) return r;
  const t = s - p;
  const tail = p - (s - t) + (c - t); // exact: (a * b + c) - s
  if (tail === 0) return r; // a true tie: fround's ties-to-even
  return tail > 0 === d > 0 ? other : r;
}

interface Axis {
  i0: Int32Array;
  i1: Int32Array;
  l0: Float32Array;
  l1: Float32Array;
}

/** `a * b + c` in float32 as one kernel build computes it: fused (one rounding) or product and sum rounded apart. */
type MultiplyAdd = (a: number, b: number, c: number) => number;
const unfused: MultiplyAdd = (a, b, c) => f(f(a * b) + c);

/** Source indices and weights along one axis: `compute_source_index_and_lambda` (UpSample.h) in float32. */
function axis(inSize: number, outSize: number, madd: MultiplyAdd): Axis {
  const i0 = new Int32Array(outSize);
  const i1 = new Int32Array(outSize);
  const l0 = new Float32Array(outSize);
  const l1 = new Float32Array(outSize);
  const scale = f(inSize / outSize); // area_pixel_compute_scale: float(in) / out
  for (let d = 0; d < outSize; d++) {
    if (inSize === outSize) {
      i0[d] = d;
      i1[d] = d;
      l0[d] = 1;
      l1[d] = 0;
      continue;
    }
    // area_pixel_compute_source_index: scale * (d + 0.5) - 0.5, fused; negative clamps to 0.
    let src = madd(scale, f(d + 0.5), -0.5);
    if (src < 0) src = 0;
    // guard_index_and_lambda
    const lo = Math.min(Math.floor(src), inSize - 1);
    i0[d] = lo;
    i1[d] = lo + (lo < inSize - 1 ? 1 : 0);
    l1[d] = Math.min(Math.max(f(src - lo), 0), 1);
    l0[d] = f(1 - l1[d]!);
  }
  return { i0, i1, l0, l1 };
}

/** Which of PyTorch's CPU kernels `F.interpolate(bilinear)` runs for a channels-last float frame. */
export function torchBilinearKernel(channels: number, outH: number, outW: number, torchThreads: number): 'channels-last' | 'separable' {
  // _use_vectorized_kernel_cond_2d (channels-last input) and the one-thread rule for 3 channels.
  return channels > 3 || outH + outW <= 128 || (torchThreads === 1 && channels === 3) ? 'channels-last' : 'separable';
}

export interface TorchResizeOptions {
  /**
   * `torch.get_num_threads()` in the process that resizes: with one thread PyTorch sends a
   * 3-channel frame through its channels-last kernel at every size. Default 2 (any count above 1
   * gives the same bytes).
   */
  torchThreads?: number;
  /**
   * PyTorch's CPU kernel build: `fused` (default) for the AVX2 and AVX512 builds that x86-64 CPUs
   * with AVX2 run, `unfused` for the portable build (`ATEN_CPU_CAPABILITY=default`, CPUs without
   * AVX2), which rounds every product and sum.
   */
  torchKernels?: 'fused' | 'unfused';
}

/**
 * `F.interpolate(x, (outH, outW), mode='bilinear', align_corners=False)` of a float32 HWC frame
 * (a channels-last tensor, as RLinf's is) on PyTorch's CPU, bit for bit. Up to 7 channels (wider
 * frames take PyTorch's vectorised loop, which this does not reproduce).
 */
export function bilinearLikeTorch(
  src: Float32Array,
  h: number,
  w: number,
  channels: number,
  outH: number,
  outW: number,
  options: TorchResizeOptions = {},
): Float32Array {
  if (!Number.isInteger(channels) || channels < 1 || channels > 7) throw new RangeError(`bilinearLikeTorch: ${channels} channels; 1 to 7 are supported`);
  const madd = options.torchKernels === 'unfused' ? unfused : fma32;
  const ys = axis(h, outH, madd);
  const xs = axis(w, outW, madd);
  const out = new Float32Array(outH * outW * channels);
  const kernel = torchBilinearKernel(channels, outH, outW, options.torchThreads ?? 2);
  for (let y = 0; y < outH; y++) {
    const r0 = ys.i0[y]! * w;
    const r1 = ys.i1[y]! * w;
    const h0 = ys.l0[y]!;
    const h1 = ys.l1[y]!;
    for (let x = 0; x < outW; x++) {
      const w0 = xs.l0[x]!;
      const w1 = xs.l1[x]!;
      const a = (r0 + xs.i0[x]!) * channels;
      const b = (r0 + xs.i1[x]!) * channels;
      const c = (r1 + xs.i0[x]!) * channels;
      const d = (r1 + xs.i1[x]!) * channels;
      const o = (y * outW + x) * channels;
      if (kernel === 'channels-last') {
        // out = i00*w00 + i01*w01 + i10*w10 + i11*w11, the weights products of the two lambdas.
        const w00 = f(h0 * w0);
        const w01 = f(h0 * w1);
        const w10 = f(h1 * w0);
        const w11 = f(h1 * w1);
        for (let k = 0; k < channels; k++) {
          const s = madd(src[a + k]!, w00, f(src[b + k]! * w01));
          out[o + k] = madd(src[d + k]!, w11, madd(src[c + k]!, w10, s));
        }
      } else {
        // Interpolate<2>: t0 * h0 + t1 * h1 over rows, each row t = p0 * w0 + p1 * w1.
        for (let k = 0; k < channels; k++) {
          const top = madd(src[a + k]!, w0, f(src[b + k]! * w1));
          const bottom = madd(src[c + k]!, w0, f(src[d + k]! * w1));
          out[o + k] = madd(top, h0, f(bottom * h1));
        }
      }
    }
  }
  return out;
}

/** A uint8 RGB frame [h,w,3] as RLinf's first observation shows it at outH x outW (see the module comment). */
export function resizeLikeRLinf(rgb: Uint8Array, h: number, w: number, outH: number, outW: number, options: TorchResizeOptions = {}): Uint8Array {
  const out = new Uint8Array(outH * outW * 3);
  const x = resizedLikeRLinf(rgb, h, w, outH, outW, options);
  for (let i = 0; i < out.length; i++) {
    const normalised = f(f(x[i]! - 0.5) / 0.5);
    const observed = f(f(f(normalised + 1) / 2) * 255);
    out[i] = Math.trunc(Math.min(255, Math.max(0, observed)));
  }
  return out;
}

/** RLinf's float32 frame [outH,outW,3] in [0, 1] after `/ 255` and the resize, before it is normalised. */
export function resizedLikeRLinf(rgb: Uint8Array, h: number, w: number, outH: number, outW: number, options: TorchResizeOptions = {}): Float32Array {
  const x = new Float32Array(rgb.length);
  for (let i = 0; i < rgb.length; i++) x[i] = f(rgb[i]! / 255);
  return h === outH && w === outW ? x : bilinearLikeTorch(x, h, w, 3, outH, outW, options);
}
