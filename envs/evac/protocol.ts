/** Messages between a {@link WorldModelRuntime} and its inference worker (structured clone, buffers transferred). */
import type { ModelMeta } from './contract.ts';

export type WorkerRequest =
  | {
      id: number;
      type: 'load';
      key: string;
      files: { world_model: string; reward: string; action_adapter: string | null };
      device: 'cpu' | 'cuda';
      deviceId: number;
      threads: number;
    }
  | {
      id: number;
      type: 'step';
      key: string;
      batch: number;
      chunk: number;
      height: number;
      width: number;
      contextFrames: number;
      actionDim: number;
      /** [B,T,H,W,3] */
      context: Uint8Array;
      /** [B,C,A], normalised */
      actions: Float32Array;
      /** [B,8] the pose before the chunk */
      pose: Float32Array;
      /** [B,...noiseShape] or null */
      noise: Float32Array | null;
      noiseShape: number[];
      /** [B,T,8] the pose at each context frame, or null when the model does not take them */
      contextPoses: Float32Array | null;
      /** [B,...latentShape] the latent state carried from the last chunk, or null */
      latent: Float32Array | null;
      latentShape: number[];
      /** A spare frame buffer of exactly [B,C,H,W,3] bytes for the output, or null */
      out: ArrayBuffer | null;
    }
  | { id: number; type: 'close' };

export type WorkerResponse =
  | { id: number; ok: true; type: 'loaded'; meta: ModelMeta; provider: 'cpu' | 'cuda'; fallback: string | null }
  | {
      id: number;
      ok: true;
      type: 'stepped';
      frames: Uint8Array;
      probs: Float32Array;
      poses: Float32Array | null;
      latent: Float32Array | null;
      spare: ArrayBuffer;
    }
  | { id: number; ok: true; type: 'closed' }
  | { id: number; ok: false; error: string };
