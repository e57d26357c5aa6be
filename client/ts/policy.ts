/**
 * Policies for rollouts: a batch of observations (one per session) in, a batch of actions out, with
 * log-probabilities and value estimates when the policy has them. The rollout engine calls `act`
 * once per group of sessions per step, so implementations batch across sessions; `check` runs once
 * before the rollout starts and refuses spaces the policy cannot serve, naming the mismatch.
 *
 * Implementations here: {@link RandomPolicy}, {@link perSessionPolicy} (wraps a function of one
 * observation, e.g. an env's baseline agent, handed in by the CLI), and the ONNX policy in
 * `policies/onnx.ts`.
 *
 * @example
 * const policy = new RandomPolicy({ seed: 0 });
 * policy.check({ observationSpace, actionSpace });
 * const { actions } = await policy.act([obs0, obs1], { sessions: ['s0', 's1'], infos: [{}, {}], episodeStarts: [true, true] });
 */
import { Random } from '../../runtime/random.ts';
import { spaceToString } from '../../protocol/spaces.ts';
import { sample } from '../../runtime/space-sample.ts';
import type { Space } from '../../protocol/spaces.ts';
import type { Tensor } from '../../protocol/tensor.ts';

export interface PolicySpaces {
  observationSpace: Space;
  actionSpace: Space;
}

export interface ActContext {
  /** Session ids, aligned with the observations. */
  sessions: readonly string[];
  /** The latest info of each session (from its reset or last step), when the caller has it. */
  infos?: readonly Record<string, unknown>[];
  /** True where the observation is the first of an episode (the rollout engine always sets it). */
  episodeStarts?: readonly boolean[];
}

/**
 * One row per observation of a named extra output: a number, a typed array (a vector) or a
 * Tensor (any shape). Every row of one name has the same dtype and shape.
 */
export type ExtraRow = number | Float32Array | Float64Array | Int32Array | Uint8Array | Int8Array | Int16Array | Uint16Array | Uint32Array | Tensor;

export interface PolicyOutput {
  /** One action per observation, each a wire value of the action space. */
  actions: unknown[];
  /** log pi(action | obs) per observation, when the policy knows it. */
  logProbs?: ArrayLike<number>;
  /** Value estimate per observation, when the policy has a critic. */
  values?: ArrayLike<number>;
  /**
   * Named outputs to keep with each step, one row per observation (e.g. the waypoints a controller
   * turned into the stored controls); datasets store them as `extras/<name>` columns.
   */
  extras?: Record<string, readonly ExtraRow[]>;
}

export interface Policy {
  /** Short description for logs and dataset manifests, e.g. `onnx:model.onnx`. */
  readonly name: string;
  /** Throws {@link PolicyMismatchError} when the policy cannot act in these spaces. */
  check(spaces: PolicySpaces): void | Promise<void>;
  act(observations: readonly unknown[], ctx: ActContext): PolicyOutput | Promise<PolicyOutput>;
  /**
   * A session starts a new episode (stateful policies drop their memory of it); `info` is the reset
   * info. Called before the `act` that sees the episode's first observation.
   */
  episodeStart?(session: string, info: Record<string, unknown>): void;
  close?(): void | Promise<void>;
}

/** A policy that does not fit the env's spaces; raised before any step is taken. */
export class PolicyMismatchError extends Error {
  override readonly name = 'PolicyMismatchError';
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Uniformly random actions from the action space, seeded. */
export class RandomPolicy implements Policy {
  readonly name = 'random';
  private space: Space | null = null;
  private readonly rng: Random;

  constructor(opts: { seed?: number } = {}) {
    this.rng = new Random(opts.seed ?? 0);
  }

  check(spaces: PolicySpaces): void {
    this.space = spaces.actionSpace;
  }

  act(observations: readonly unknown[]): PolicyOutput {
    const space = this.space;
    if (!space) throw new PolicyMismatchError('RandomPolicy.act called before check(): it does not know the action space yet');
    return { actions: observations.map(() => sample(space, this.rng)) };
  }
}

/**
 * Adapts a function of one observation (a baseline agent, a scripted controller) into a batched
 * policy. `accepts` may refuse spaces by returning a reason.
 */
export function perSessionPolicy(
  name: string,
  actOne: (obs: unknown, session: string, info: Record<string, unknown>) => unknown | Promise<unknown>,
  opts: {
    accepts?: (spaces: PolicySpaces) => string | null;
    episodeStart?: (session: string, info: Record<string, unknown>) => void;
    close?: () => void | Promise<void>;
  } = {},
): Policy {
  return {
    name,
    check(spaces) {
      const reason = opts.accepts?.(spaces) ?? null;
      if (reason)
        throw new PolicyMismatchError(
          `policy ${name} cannot act in ${spaceToString(spaces.observationSpace)} -> ${spaceToString(spaces.actionSpace)}: ${reason}`,
        );
    },
    async act(observations, ctx) {
      return { actions: await Promise.all(observations.map((o, i) => actOne(o, ctx.sessions[i]!, ctx.infos?.[i] ?? {}))) };
    },
    ...(opts.episodeStart ? { episodeStart: opts.episodeStart } : {}),
    ...(opts.close ? { close: opts.close } : {}),
  };
}
