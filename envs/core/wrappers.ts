/**
 * Wrappers: everything beyond the tiny Env core. Each forwards what it does not change.
 */
import { contains } from '../../protocol/spaces.ts';
import type { Env, EnvTool, RenderFrame, ResetOptions, ResetResult, StepResult } from './env.ts';
import { packState, unpackState } from './state.ts';

/** Forwards everything to the wrapped env; subclasses override what they change. */
export class Wrapper implements Env {
  constructor(readonly env: Env) {}

  get observationSpace() {
    return this.env.observationSpace;
  }
  get actionSpace() {
    return this.env.actionSpace;
  }
  get metadata() {
    return this.env.metadata;
  }
  get renderMode() {
    return this.env.renderMode ?? null;
  }
  get tools(): readonly EnvTool<never>[] | undefined {
    return this.env.tools;
  }
  /** The innermost env. */
  get unwrapped(): Env {
    return this.env instanceof Wrapper ? this.env.unwrapped : this.env;
  }

  reset(opts?: ResetOptions): ResetResult | Promise<ResetResult> {
    return this.env.reset(opts);
  }
  step(action: unknown): StepResult | Promise<StepResult> {
    return this.env.step(action);
  }
  render(): RenderFrame | null | Promise<RenderFrame | null> {
    return this.env.render ? this.env.render() : null;
  }
  close(): void | Promise<void> {
    return this.env.close?.();
  }
  get getState(): (() => Uint8Array | Promise<Uint8Array>) | undefined {
    const inner = this.env.getState?.bind(this.env);
    return inner;
  }
  get setState(): ((state: Uint8Array) => void | Promise<void>) | undefined {
    return this.env.setState?.bind(this.env);
  }
}

export function unwrap(env: Env): Env {
  return env instanceof Wrapper ? env.unwrapped : env;
}

/** Thrown by OrderEnforcing. */
export class ResetNeededError extends Error {
  override readonly name = 'ResetNeededError';
}

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as Promise<T>)?.then === 'function';
}

/** Then-or-call without forcing a microtask on sync envs. */
export function after<T, U>(v: T | Promise<T>, fn: (x: T) => U): U | Promise<U> {
  return isPromise(v) ? v.then(fn) : fn(v);
}

/** Refuses step and render before the first reset, and step after an episode ended. */
export class OrderEnforcing extends Wrapper {
  private hasReset = false;
  private ended = false;

  override reset(opts?: ResetOptions) {
    return after(this.env.reset(opts), (r) => {
      this.hasReset = true;
      this.ended = false;
      return r;
    });
  }

  override step(action: unknown) {
    if (!this.hasReset) throw new ResetNeededError('call reset before step');
    if (this.ended) throw new ResetNeededError('the episode has ended (terminated or truncated); call reset before stepping again');
    return after(this.env.step(action), (r) => {
      if (r.terminated || r.truncated) this.ended = true;
      return r;
    });
  }

  override render() {
    if (!this.hasReset) throw new ResetNeededError('call reset before render');
    return super.render();
  }

  override get getState() {
    const inner = this.env.getState?.bind(this.env);
    if (!inner) return undefined;
    return () => after(inner(), (bytes) => packState('OrderEnforcing', [this.hasReset, this.ended, bytes]));
  }

  override get setState() {
    const inner = this.env.setState?.bind(this.env);
    if (!inner) return undefined;
    return (state: Uint8Array) => {
      const [hasReset, ended, bytes] = unpackState<[boolean, boolean, Uint8Array]>('OrderEnforcing', state);
      return after(inner(bytes), () => {
        this.hasReset = hasReset;
        this.ended = ended;
      });
    };
  }
}

/** Truncates episodes after `maxEpisodeSteps` steps (Gymnasium's TimeLimit). */
export class TimeLimit extends Wrapper {
  private elapsed = 0;

  constructor(
    env: Env,
    readonly maxEpisodeSteps: number,
  ) {
    super(env);
  }

  get elapsedSteps(): number {
    return this.elapsed;
  }

  override reset(opts?: ResetOptions) {
    this.elapsed = 0;
    return this.env.reset(opts);
  }

  override step(action: unknown) {
    return after(this.env.step(action), (r) => {
      this.elapsed += 1;
      if (this.elapsed >= this.maxEpisodeSteps && !r.truncated) return { ...r, truncated: true };
      return r;
    });
  }

  override get getState() {
    const inner = this.env.getState?.bind(this.env);
    if (!inner) return undefined;
    return () => after(inner(), (bytes) => packState('TimeLimit', [this.elapsed, bytes]));
  }

  override get setState() {
    const inner = this.env.setState?.bind(this.env);
    if (!inner) return undefined;
    return (state: Uint8Array) => {
      const [elapsed, bytes] = unpackState<[number, Uint8Array]>('TimeLimit', state);
      return after(inner(bytes), () => {
        this.elapsed = elapsed;
      });
    };
  }
}

/** Thrown by PassiveEnvChecker when the env breaks its own contract. */
export class EnvContractError extends Error {
  override readonly name = 'EnvContractError';
}

/** Checks every reset and step result against the env's declared spaces and the Gymnasium contract. */
export class PassiveEnvChecker extends Wrapper {
  override reset(opts?: ResetOptions) {
    return after(this.env.reset(opts), (r) => {
      const err = contains(this.observationSpace, r.obs);
      if (err) throw new EnvContractError(`reset returned an observation outside the observation space: ${err}`);
      if (typeof r.info !== 'object' || r.info === null) throw new EnvContractError('reset info must be a map');
      return r;
    });
  }

  override step(action: unknown) {
    return after(this.env.step(action), (r) => {
      const err = contains(this.observationSpace, r.obs);
      if (err) throw new EnvContractError(`step returned an observation outside the observation space: ${err}`);
      if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) throw new EnvContractError(`step reward must be a finite number, got ${r.reward}`);
      if (typeof r.terminated !== 'boolean' || typeof r.truncated !== 'boolean') throw new EnvContractError('terminated and truncated must be booleans');
      if (typeof r.info !== 'object' || r.info === null) throw new EnvContractError('step info must be a map');
      return r;
    });
  }
}
