/**
 * The session core's side of every call into an env: a deadline and one fault mapping
 * (runtime/channel.ts), so an in-process env (a plugin) that throws something odd answers with
 * ENV_ERR_ENV_FAILURE naming the env, and one whose call never settles answers its request with
 * ENV_ERR_ENV_FAILURE (`details.timed_out`) after `deadlineMs` instead of holding its session forever.
 *
 * After a call missed its deadline the env may still be inside it, so the session is lost: every
 * later call fails at once with ENV_ERR_ENV_FAILURE (`details.session_lost`), and `close` answers
 * at once without waiting on the env (its own close runs in the background, bounded by the same
 * deadline). Envs whose link has its own deadline (`boundsOwnCalls`: Python workers, env threads)
 * get the fault mapping only.
 *
 * @example
 * const env = new EnvGuard(await registry.make(id, kwargs), 'gymwire/CartPole-v1', 60_000);
 */
import type { Env, EnvTool, RenderFrame, ResetOptions, ResetResult, StepResult } from '../envs/core/env.ts';
import { unwrap, Wrapper } from '../envs/core/wrappers.ts';
import { previewValue, ProtocolError } from '../protocol/errors.ts';
import { withDeadline } from '../runtime/channel.ts';

/** How long one env call may take by default before its session is lost (ms). */
export const DEFAULT_ENV_CALL_TIMEOUT_MS = 300_000;

export class EnvGuard extends Wrapper {
  /** Why the session is lost (a call missed its deadline), or null. */
  private lostReason: string | null = null;
  private readonly deadlineMs: number;
  private guardedTools: readonly EnvTool<never>[] | undefined;

  constructor(
    env: Env,
    private readonly envId: string,
    deadlineMs: number,
  ) {
    super(env);
    this.deadlineMs = unwrap(env).boundsOwnCalls ? 0 : deadlineMs;
  }

  get lost(): string | null {
    return this.lostReason;
  }

  override get tools(): readonly EnvTool<never>[] | undefined {
    const inner = this.env.tools;
    if (inner === undefined) return undefined;
    this.guardedTools ??= inner.map((t) => ({ ...t, handler: (args: never, ctx) => this.guard(`tool ${t.name}`, () => t.handler(args, ctx)) }));
    return this.guardedTools;
  }

  override reset(opts?: ResetOptions): ResetResult | Promise<ResetResult> {
    const out = this.guard('reset', () => this.env.reset(opts));
    return out instanceof Promise ? out.then(this.checkReset) : this.checkReset(out);
  }

  override step(action: unknown): StepResult | Promise<StepResult> {
    const out = this.guard('step', () => this.env.step(action));
    return out instanceof Promise ? out.then(this.checkStep) : this.checkStep(out);
  }

  /** A step answer the wire can carry: an env that returns anything else is at fault, not the server or the client. */
  private readonly checkStep = (r: StepResult): StepResult => {
    if (typeof r !== 'object' || r === null || typeof r.reward !== 'number' || typeof r.terminated !== 'boolean' || typeof r.truncated !== 'boolean') {
      throw this.garbage('step', r, '{obs, reward: number, terminated: boolean, truncated: boolean, info}');
    }
    return r;
  };

  private readonly checkReset = (r: ResetResult): ResetResult => {
    if (typeof r !== 'object' || r === null || !('obs' in r)) throw this.garbage('reset', r, '{obs, info}');
    return r;
  };

  private garbage(what: string, value: unknown, expected: string): ProtocolError {
    return new ProtocolError('ENV_ERR_ENV_FAILURE', `${what} of the env ${this.envId} returned ${previewValue(value)}, not ${expected}`, { side: 'env' });
  }

  override render(): RenderFrame | null | Promise<RenderFrame | null> {
    return this.guard('render', () => (this.env.render ? this.env.render() : null));
  }

  override get getState(): (() => Uint8Array | Promise<Uint8Array>) | undefined {
    const get = this.env.getState?.bind(this.env);
    return get && (() => this.guard('get_state', get));
  }

  override get setState(): ((state: Uint8Array) => void | Promise<void>) | undefined {
    const set = this.env.setState?.bind(this.env);
    return set && ((state: Uint8Array) => this.guard('set_state', () => set(state)));
  }

  /** Closes the env; a lost session's env closes in the background (it may still be inside its hung call). */
  override close(): void | Promise<void> {
    const closing = withDeadline(() => this.env.close?.(), this.context('close'));
    if (this.lostReason === null || !(closing instanceof Promise)) return closing;
    closing.catch(() => undefined);
  }

  private context(what: string) {
    return { peer: `the env ${this.envId}`, what, deadlineMs: this.deadlineMs };
  }

  private guard<T>(what: string, call: () => T | Promise<T>): T | Promise<T> {
    if (this.lostReason !== null) {
      throw new ProtocolError('ENV_ERR_ENV_FAILURE', `this session is lost: ${this.lostReason}; close it and make a new one`, { session_lost: true });
    }
    const out = withDeadline(call, this.context(what));
    if (!(out instanceof Promise) || this.deadlineMs === 0) return out;
    return out.catch((err: unknown) => {
      if (err instanceof ProtocolError && err.details.timed_out === true) this.lostReason ??= `${what} did not finish within ${this.deadlineMs} ms`;
      throw err;
    });
  }
}
