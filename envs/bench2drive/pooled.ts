/**
 * Bench2Drive with its cameras rendered on a render thread: the env simulates on the calling
 * thread (cheap) and leaves `rgb` empty; this wrapper has the pool draw the images for exactly the
 * scene the observation describes and fills them in. Making a session with six 3200x1800 cameras
 * and stepping it then cost the event loop almost nothing; the images are the ones the env would
 * have drawn itself.
 *
 * @example
 * const env = new PooledCameras(new Bench2DriveEnv({ cameras: true }, { externalCameras: true }), pool);
 * const { obs } = await env.reset({ seed: 0 }); // obs.rgb.CAM_FRONT: uint8 [900, 1600, 3]
 */
import { Tensor } from '../../protocol/tensor.ts';
import type { RenderFrame, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { Wrapper } from '../core/wrappers.ts';
import type { RenderInput } from '../driving/render/index.ts';
import type { PooledCameraRig, RenderPool } from '../driving/render/pool.ts';
import type { Bench2DriveEnv } from './env.ts';

export class PooledCameras extends Wrapper {
  private readonly rig: PooledCameraRig;

  constructor(
    private readonly driving: Bench2DriveEnv,
    pool: RenderPool,
  ) {
    super(driving);
    this.rig = pool.rig(driving.cameras);
  }

  override async reset(opts?: ResetOptions): Promise<ResetResult> {
    return this.withImages(await this.driving.reset(opts));
  }

  override async step(action: unknown): Promise<StepResult> {
    return this.withImages(await this.driving.step(action));
  }

  /** The front camera's current view (rgb_array mode). */
  override async render(): Promise<RenderFrame | null> {
    const input = this.driving.renderMode === 'rgb_array' ? this.driving.currentCameraInput() : null;
    if (!input) return null;
    const [image] = await this.rig.render(input, 0);
    const cam = this.driving.cameras[0]!;
    return new Tensor('uint8', [cam.height, cam.width, 3], image!);
  }

  override close(): void | Promise<void> {
    this.rig.close();
    return this.driving.close();
  }

  private async withImages<R extends { obs: unknown }>(result: R): Promise<R> {
    // Taken now, before anything else can move the world on.
    const input: RenderInput | null = this.driving.lastCameraInput();
    if (!input) throw new Error('the env produced an observation without a camera scene');
    const images = await this.rig.render(input);
    const obs = result.obs as Record<string, unknown>;
    obs['rgb'] = Object.fromEntries(this.driving.cameras.map((c, i) => [c.name, new Tensor('uint8', [c.height, c.width, 3], images[i]!)]));
    return result;
  }
}
