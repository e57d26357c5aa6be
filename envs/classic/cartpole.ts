/**
 * CartPole-v1, a faithful port of Gymnasium's `CartPoleEnv`: same constants, Euler integration,
 * termination thresholds, reward (1 per step, including the terminating one) and 500-step limit
 * (applied by the registry's TimeLimit). The state is kept in float64 and observed as float32, as
 * Gymnasium does. Initial states are uniform in [-0.05, 0.05] from the session's seeded RNG.
 */
import { box, discrete } from '../../protocol/spaces.ts';
import { Random } from '../../runtime/random.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { Env, EnvMetadata, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { InvalidActionError } from '../core/env.ts';
import { packState, unpackState } from '../core/state.ts';

const GRAVITY = 9.8;
const MASS_CART = 1.0;
const MASS_POLE = 0.1;
const TOTAL_MASS = MASS_POLE + MASS_CART;
const LENGTH = 0.5; // half the pole's length
const POLE_MASS_LENGTH = MASS_POLE * LENGTH;
const FORCE_MAG = 10.0;
const TAU = 0.02;
const THETA_THRESHOLD = (12 * 2 * Math.PI) / 360;
const X_THRESHOLD = 2.4;

export interface CartPoleOptions {
  render_mode?: 'rgb_array' | null;
}

export class CartPoleEnv implements Env<Tensor<'float32'>, number> {
  readonly observationSpace = box({
    low: [-X_THRESHOLD * 2, -Infinity, -THETA_THRESHOLD * 2, -Infinity],
    high: [X_THRESHOLD * 2, Infinity, THETA_THRESHOLD * 2, Infinity],
    dtype: 'float32',
  });
  readonly actionSpace = discrete(2);
  readonly metadata: EnvMetadata = { render_modes: ['rgb_array'], render_fps: 50 };
  readonly renderMode: 'rgb_array' | null;

  private readonly rng = new Random();
  private state: [number, number, number, number] | null = null;
  private stepsBeyondTerminated: number | null = null;

  constructor(opts: CartPoleOptions = {}) {
    this.renderMode = opts.render_mode ?? null;
  }

  reset(opts: ResetOptions = {}): ResetResult<Tensor<'float32'>> {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const u = () => this.rng.uniform(-0.05, 0.05);
    this.state = [u(), u(), u(), u()];
    this.stepsBeyondTerminated = null;
    return { obs: this.observe(), info: {} };
  }

  step(action: number): StepResult<Tensor<'float32'>> {
    if (action !== 0 && action !== 1) throw new InvalidActionError(`${String(action)} invalid: CartPole takes 0 (push left) or 1 (push right)`);
    if (this.state === null) throw new InvalidActionError('call reset before step');
    let [x, xDot, theta, thetaDot] = this.state;
    const force = action === 1 ? FORCE_MAG : -FORCE_MAG;
    const cos = Math.cos(theta);
    const sin = Math.sin(theta);
    const temp = (force + POLE_MASS_LENGTH * thetaDot ** 2 * sin) / TOTAL_MASS;
    const thetaAcc = (GRAVITY * sin - cos * temp) / (LENGTH * (4.0 / 3.0 - (MASS_POLE * cos ** 2) / TOTAL_MASS));
    const xAcc = temp - (POLE_MASS_LENGTH * thetaAcc * cos) / TOTAL_MASS;
    x += TAU * xDot;
    xDot += TAU * xAcc;
    theta += TAU * thetaDot;
    thetaDot += TAU * thetaAcc;
    this.state = [x, xDot, theta, thetaDot];

    const terminated = x < -X_THRESHOLD || x > X_THRESHOLD || theta < -THETA_THRESHOLD || theta > THETA_THRESHOLD;
    let reward: number;
    if (!terminated) reward = 1.0;
    else if (this.stepsBeyondTerminated === null) {
      this.stepsBeyondTerminated = 0;
      reward = 1.0;
    } else {
      this.stepsBeyondTerminated += 1;
      reward = 0.0;
    }
    return { obs: this.observe(), reward, terminated, truncated: false, info: {} };
  }

  /** A 600x400 RGB frame like Gymnasium's: track, cart and pole. */
  render(): Tensor<'uint8'> | null {
    if (this.renderMode !== 'rgb_array' || this.state === null) return null;
    const W = 600;
    const H = 400;
    const img = new Uint8Array(W * H * 3).fill(255);
    const scale = W / (X_THRESHOLD * 2);
    const cartY = 100;
    const cartX = this.state[0] * scale + W / 2;
    const fill = (x0: number, y0: number, x1: number, y1: number, rgb: [number, number, number]) => {
      for (let y = Math.max(0, Math.floor(y0)); y < Math.min(H, Math.ceil(y1)); y++)
        for (let x = Math.max(0, Math.floor(x0)); x < Math.min(W, Math.ceil(x1)); x++) {
          // Gymnasium flips the frame vertically; row 0 is the top.
          const o = ((H - 1 - y) * W + x) * 3;
          img[o] = rgb[0];
          img[o + 1] = rgb[1];
          img[o + 2] = rgb[2];
        }
    };
    fill(0, cartY - 1, W, cartY, [0, 0, 0]);
    fill(cartX - 25, cartY - 15, cartX + 25, cartY + 15, [0, 0, 0]);
    const poleLen = scale * 2 * LENGTH;
    const theta = this.state[2];
    for (let s = 0; s <= poleLen; s += 0.5) {
      const px = cartX + Math.sin(theta) * s;
      const py = cartY + 10 + Math.cos(theta) * s;
      fill(px - 5, py - 5, px + 5, py + 5, [202, 152, 101]);
    }
    fill(cartX - 5, cartY + 5, cartX + 5, cartY + 15, [129, 132, 203]);
    return new Tensor('uint8', [H, W, 3], img);
  }

  close(): void {}

  getState(): Uint8Array {
    return packState('CartPole-v1', { state: this.state, beyond: this.stepsBeyondTerminated, rng: this.rng.getState() });
  }

  setState(bytes: Uint8Array): void {
    const s = unpackState<{ state: [number, number, number, number] | null; beyond: number | null; rng: number[] }>('CartPole-v1', bytes);
    this.state = s.state;
    this.stepsBeyondTerminated = s.beyond;
    this.rng.setState(s.rng);
  }

  private observe(): Tensor<'float32'> {
    return new Tensor('float32', [4], Float32Array.from(this.state!));
  }
}
