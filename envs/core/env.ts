/**
 * The Env contract: Gymnasium's `Env` in TypeScript, plus tools and state save/load.
 *
 * An env is small on purpose: spaces, metadata, `reset`, `step`, `render`, `close`. Time limits,
 * order enforcing and checking are wrappers that `Registry.make` stacks on top. Methods may return
 * a value or a promise (ONNX-backed envs are async, CartPole is not); the server awaits only when
 * it has to. Observations, infos and actions are wire values: tensors ({@link Tensor}), numbers,
 * bigints, strings, booleans, null, arrays, plain objects and raw bytes (Uint8Array).
 *
 * @example
 * class Coin implements Env {
 *   observationSpace = discrete(2); actionSpace = discrete(2); metadata = { render_modes: [] };
 *   rng = new Random();
 *   reset({ seed } = {}) { if (seed != null) this.rng.seed(seed); return { obs: 0, info: {} }; }
 *   step(a: number) { const side = this.rng.integer(0, 2); return { obs: side, reward: a === side ? 1 : 0, terminated: true, truncated: false, info: {} }; }
 * }
 */
import type { z } from 'zod';

import type { Space } from '../../protocol/spaces.ts';
import type { Tensor } from '../../protocol/tensor.ts';

export type MaybePromise<T> = T | Promise<T>;

/** Anything msgpack + tensors can carry. */
export type Value = unknown;
export type Info = Record<string, Value>;

export interface ResetOptions {
  /** Integer seed; null or absent keeps the current RNG stream (Gymnasium semantics). */
  seed?: number | null;
  options?: Record<string, Value> | null;
}

export interface ResetResult<Obs = Value> {
  obs: Obs;
  info: Info;
}

export interface StepResult<Obs = Value> {
  obs: Obs;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Info;
}

/** A rendered frame: an RGB(A) uint8 tensor [H, W, 3|4], or ANSI text for `render_mode: 'ansi'`. */
export type RenderFrame = Tensor | string;

export interface EnvMetadata {
  /** Render modes the env supports, e.g. ['rgb_array']. */
  render_modes: string[];
  render_fps?: number;
  /** Anything else the env wants clients to know (camera names, benchmark version...). */
  [key: string]: Value;
}

/** What a tool handler gets besides its validated arguments. */
export interface ToolContext {
  /** The env the tool belongs to (the unwrapped instance: cast it to the env's class). */
  env: Env;
  /** The same env with the registry's wrappers (TimeLimit, OrderEnforcing): step through this so limits apply. */
  wrapped: Env;
}

/**
 * A tool an agent can call on a session (`execute`). The input schema is zod; the server turns it
 * into OpenAI function-calling JSON Schema and validates arguments against it before the handler
 * runs. A tool that advances the episode should return reward/terminated/truncated in its result.
 */
export interface EnvTool<Args = Record<string, Value>> {
  name: string;
  description: string;
  inputSchema: z.ZodType<Args>;
  handler(args: Args, ctx: ToolContext): MaybePromise<Value>;
}

export interface Env<Obs = Value, Act = Value> {
  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: EnvMetadata;
  /** The render mode chosen at make time (kwarg `render_mode`), or null. */
  readonly renderMode?: string | null;
  readonly tools?: readonly EnvTool<never>[];
  /**
   * The step at which the env truncates episodes by itself, when it does (a route's tick budget,
   * a world model's episode length); the server reports it as `max_episode_steps` when no
   * registry time limit wraps the env.
   */
  readonly maxEpisodeSteps?: number | null;
  /**
   * Set by envs that reach their work over a link with its own deadline (a Python worker, an env
   * thread): the server then adds none of its own to their calls.
   */
  readonly boundsOwnCalls?: boolean;

  /**
   * reset and step hand their observation to the server: a tensor of a megabyte or more is sent
   * (and held for a retried request) from the env's own memory, after the call returns, so an env
   * never writes into a large tensor it returned; smaller ones are copied into the answer at once.
   */
  reset(opts?: ResetOptions): MaybePromise<ResetResult<Obs>>;
  step(action: Act): MaybePromise<StepResult<Obs>>;
  render?(): MaybePromise<RenderFrame | null>;
  close?(): MaybePromise<void>;

  /** Opaque bytes that `setState` restores exactly: the same future follows from the same actions. */
  getState?(): MaybePromise<Uint8Array>;
  setState?(state: Uint8Array): MaybePromise<void>;
}

/** Helper for declaring tools with their argument type inferred from the schema. */
export function defineTool<S extends z.ZodType>(tool: {
  name: string;
  description: string;
  inputSchema: S;
  handler(args: z.infer<S>, ctx: ToolContext): MaybePromise<Value>;
}): EnvTool<never> {
  return tool as unknown as EnvTool<never>;
}

/** Thrown by envs for bad input they detect themselves (an action out of range, bad options). */
export class InvalidActionError extends Error {
  override readonly name = 'InvalidActionError';
}

/** Thrown by `setState` when the bytes cannot be restored. */
export class InvalidStateError extends Error {
  override readonly name = 'InvalidStateError';
}

/** Thrown by `reset` when the options are invalid (unknown scene index...). */
export class InvalidOptionsError extends Error {
  override readonly name = 'InvalidOptionsError';
}
