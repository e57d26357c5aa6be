/**
 * Envs used only by benchmarks: an image env with a 224x224x3 uint8 observation per step.
 */
import { registerClassic } from '../../envs/classic/index.ts';
import type { Env } from '../../envs/core/env.ts';
import { Registry } from '../../envs/core/registry.ts';
import { box, discrete } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';

export class ImageEnv implements Env {
  readonly observationSpace = box({ low: 0, high: 255, shape: [224, 224, 3], dtype: 'uint8' });
  readonly actionSpace = discrete(2);
  readonly metadata = { render_modes: [] };
  private frame = 0;
  private readonly pixels = new Uint8Array(224 * 224 * 3);

  reset() {
    this.frame = 0;
    return { obs: this.observe(), info: {} };
  }

  step() {
    this.frame++;
    return { obs: this.observe(), reward: 1, terminated: false, truncated: false, info: {} };
  }

  private observe(): Tensor {
    // Touch a stripe so frames differ, without paying for a full redraw (the bench measures the wire).
    this.pixels.fill(this.frame & 0xff, 0, 224 * 3);
    return new Tensor('uint8', [224, 224, 3], this.pixels);
  }
}

export function benchRegistry(): Registry {
  const registry = new Registry();
  registerClassic(registry);
  registry.register({ id: 'bench/Image-v0', entryPoint: () => new ImageEnv() });
  return registry;
}
