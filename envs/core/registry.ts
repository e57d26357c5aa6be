/**
 * The env registry: Gymnasium-style ids (`namespace/Name-vN`), kwargs validated by zod, and the
 * standard wrappers stacked by `make` (PassiveEnvChecker, OrderEnforcing, TimeLimit).
 *
 * A registry is an ordinary object: the server gets one injected; `defaultRegistry()` builds one
 * holding every built-in env. Its options ({@link RegistryOptions}: the data roots path kwargs may
 * point into, a logger) reach each entry point as the {@link MakeContext}.
 *
 * @example
 * const registry = new Registry();
 * registry.register({ id: 'gymwire/CartPole-v1', entryPoint: () => new CartPoleEnv(), maxEpisodeSteps: 500 });
 * const env = await registry.make('gymwire/CartPole-v1');
 */
import type { Logger } from 'pino';
import { z } from 'zod';

import { DataRoots } from './data-roots.ts';
import type { ToolDescription } from '../../protocol/messages.ts';
import type { Env, EnvTool, MaybePromise } from './env.ts';
import { InvalidKwargsError } from './kwargs-error.ts';
import { toolDescriptions } from './tool-descriptions.ts';
import { OrderEnforcing, PassiveEnvChecker, TimeLimit } from './wrappers.ts';

export const ENV_ID_RE = /^(?:(?<namespace>[\w:.-]+)\/)?(?<name>[\w:.-]+?)(?:-v(?<version>\d+))?$/;

export interface EnvSpec<K = Record<string, unknown>> {
  id: string;
  description?: string;
  /** Builds the unwrapped env from validated kwargs. */
  entryPoint(kwargs: K, ctx: MakeContext): MaybePromise<Env>;
  /** Validates make kwargs; unknown keys are rejected unless the schema allows them. */
  kwargsSchema?: z.ZodType<K>;
  /** Applies TimeLimit when set (Gymnasium's max_episode_steps). */
  maxEpisodeSteps?: number;
  /**
   * The step at which a session made with the default kwargs truncates by itself, for an env
   * that keeps its own limit instead of a TimeLimit (a route's tick budget, a world model's
   * episode length): `list_envs` reports it, so it agrees with `make`'s answer.
   */
  ownEpisodeSteps?: number;
  /** Free-form tags for listings (e.g. ['driving', 'benchmark']). */
  tags?: string[];
  /**
   * The tools every session of this env has, when they do not depend on the session (the env's
   * `tools` returns the same list). Listings show them, so MCP hosts see them before any make.
   */
  tools?: readonly EnvTool<never>[];
  /**
   * The memory one session holds, in bytes, for these (validated) kwargs: cameras, buffers, tables.
   * The server checks it against its memory budgets before building the env, so it must be cheap
   * and computed from the kwargs alone. Absent: DEFAULT_SESSION_BYTES.
   */
  estimateBytes?(kwargs: K): number;
}

/** What a session of an env that declares no estimate is assumed to hold. */
export const DEFAULT_SESSION_BYTES = 1024 * 1024;

export interface EnvListing {
  id: string;
  description: string;
  max_episode_steps: number | null;
  tags: string[];
  kwargs_schema: Record<string, unknown> | null;
  /** The env's tools, known up front; null when only a made session knows them (hosted envs). */
  tools: ToolDescription[] | null;
}

export class UnknownEnvError extends Error {
  override readonly name = 'UnknownEnvError';
  constructor(
    readonly envId: string,
    readonly available: string[],
  ) {
    super(`no env is registered as ${JSON.stringify(envId)}; available: ${available.join(', ')}`);
  }
}

export { InvalidKwargsError };

/** What `make` hands an entry point besides its kwargs: the registry owner's policy, not globals. */
export interface MakeContext {
  /** Where path kwargs may point (docs/security.md, "Data roots"). */
  readonly dataRoots: DataRoots;
  /** For what a client must not see, such as why its data does not load. */
  readonly log?: Logger;
}

export interface RegistryOptions {
  /** Where path kwargs may point; default none beyond each family's bundled assets. */
  dataRoots?: DataRoots;
  logger?: Logger;
}

export interface MakeOptions {
  /** Wrap with the passive checker (validates every obs against the space). Default false. */
  check?: boolean;
  /** Override the spec's max_episode_steps (null disables TimeLimit). */
  maxEpisodeSteps?: number | null;
}

/** Something that writes Prometheus text (a prom-client Registry): an env family's own metrics. */
export interface MetricsSource {
  metrics(): Promise<string>;
}

export class Registry {
  private readonly specs = new Map<string, EnvSpec<never>>();
  private readonly closeHooks: (() => unknown)[] = [];
  private readonly metricSources: MetricsSource[] = [];
  private readonly context: MakeContext;

  constructor(opts: RegistryOptions = {}) {
    this.context = { dataRoots: opts.dataRoots ?? new DataRoots(), log: opts.logger };
  }

  /** Registers something to release when the registry's owner shuts down (model runtimes, worker pools). */
  onClose(hook: () => unknown): void {
    this.closeHooks.push(hook);
  }

  /** Returns `resource`, closed with the registry: for pools a family starts for itself. */
  closes<T extends { close(): unknown }>(resource: T): T {
    this.onClose(() => resource.close());
    return resource;
  }

  /** Adds a family's metrics to the /metrics of every server that serves this registry (names must not clash with the server's). */
  exposeMetrics(source: MetricsSource): void {
    this.metricSources.push(source);
  }

  /** The families' metrics as Prometheus text ('' when none). */
  async metricsText(): Promise<string> {
    const texts = await Promise.all(this.metricSources.map((s) => s.metrics()));
    return texts.filter((t) => t !== '').join('\n');
  }

  /** Releases what the env families registered with onClose. */
  async close(): Promise<void> {
    await Promise.allSettled(this.closeHooks.splice(0).map((h) => h()));
  }

  register<K>(spec: EnvSpec<K>): void {
    if (!ENV_ID_RE.test(spec.id)) throw new Error(`env id ${JSON.stringify(spec.id)} does not match namespace/Name-vN`);
    if (this.specs.has(spec.id)) throw new Error(`env id ${spec.id} is already registered`);
    this.specs.set(spec.id, spec as unknown as EnvSpec<never>);
  }

  has(id: string): boolean {
    return this.specs.has(id);
  }

  spec(id: string): EnvSpec<Record<string, unknown>> {
    const spec = this.specs.get(id);
    if (!spec) throw new UnknownEnvError(id, this.ids());
    return spec as unknown as EnvSpec<Record<string, unknown>>;
  }

  ids(): string[] {
    return [...this.specs.keys()].sort();
  }

  list(): EnvListing[] {
    return this.ids().map((id) => {
      const spec = this.spec(id);
      let kwargsSchema: Record<string, unknown> | null = null;
      if (spec.kwargsSchema) {
        try {
          kwargsSchema = z.toJSONSchema(spec.kwargsSchema, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>;
        } catch {
          kwargsSchema = null;
        }
      }
      return {
        id,
        description: spec.description ?? '',
        max_episode_steps: spec.maxEpisodeSteps ?? spec.ownEpisodeSteps ?? null,
        tags: spec.tags ?? [],
        kwargs_schema: kwargsSchema,
        tools: spec.tools ? toolDescriptions(spec.tools) : null,
      };
    });
  }

  /** Validates kwargs and returns the memory a session made with them would hold (see EnvSpec.estimateBytes). */
  estimateBytes(id: string, kwargs: Record<string, unknown> = {}): number {
    const spec = this.spec(id);
    if (!spec.estimateBytes) return DEFAULT_SESSION_BYTES;
    const bytes = spec.estimateBytes(this.parseKwargs(spec, kwargs));
    return Number.isFinite(bytes) && bytes > 0 ? Math.ceil(bytes) : DEFAULT_SESSION_BYTES;
  }

  /** Validates kwargs and builds the env with the standard wrappers. */
  async make(id: string, kwargs: Record<string, unknown> = {}, opts: MakeOptions = {}): Promise<Env> {
    const spec = this.spec(id);
    let env: Env = await spec.entryPoint(this.parseKwargs(spec, kwargs), this.context);
    if (opts.check) env = new PassiveEnvChecker(env);
    const limit = opts.maxEpisodeSteps === undefined ? spec.maxEpisodeSteps : opts.maxEpisodeSteps;
    if (limit != null) env = new TimeLimit(env, limit);
    // Outermost, so it sees TimeLimit's truncation and refuses steps past the end of an episode.
    return new OrderEnforcing(env);
  }

  private parseKwargs(spec: EnvSpec<Record<string, unknown>>, kwargs: Record<string, unknown>): Record<string, unknown> {
    const id = spec.id;
    let parsed: Record<string, unknown> = kwargs;
    if (spec.kwargsSchema) {
      const result = spec.kwargsSchema.safeParse(kwargs);
      if (!result.success) {
        const issues = result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
        throw new InvalidKwargsError(`invalid kwargs for ${id}: ${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ')}`, issues);
      }
      parsed = result.data;
    } else if (Object.keys(kwargs).length > 0) {
      throw new InvalidKwargsError(`${id} takes no kwargs, got ${Object.keys(kwargs).join(', ')}`, [
        { path: Object.keys(kwargs)[0]!, message: 'unexpected kwarg' },
      ]);
    }
    return parsed;
  }
}
