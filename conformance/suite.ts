/**
 * The behavioural conformance suite, in the spirit of dm_env_rpc's compliance tests and
 * Gymnasium's check_env: it runs against any gymwire server (any transport, any env) through the
 * TypeScript client and raw frames. `gymwire check ws://HOST:PORT` and the test suite both use it.
 *
 * Each case passes, fails (throws) or is skipped with a reason (e.g. the env has no state
 * support, or the server's limits are too large to probe cheaply).
 */
import { decode } from '../protocol/codec.ts';
import { isErrorCode, previewValue, ProtocolError } from '../protocol/errors.ts';
import { CONFORMANCE_CLIENT_NAME, PROTOCOL_VERSION, WelcomeResultSchema } from '../protocol/messages.ts';
import { Random } from '../runtime/random.ts';
import { batchLength } from '../protocol/batch.ts';
import { contains, isPlainObject } from '../protocol/spaces.ts';
import { sample } from '../runtime/space-sample.ts';
import type { Space } from '../protocol/spaces.ts';
import { Tensor } from '../protocol/tensor.ts';
import { connect } from '../client/ts/client.ts';
import type { GymwireClient } from '../client/ts/client.ts';
import type { RemoteEnv } from '../client/ts/remote-env.ts';
import type { ClientTransport, Connector } from '../client/ts/transport.ts';
import { wsConnector } from '../client/ts/transport.ts';
import { fuzzFrame } from './fuzz.ts';
import {
  batchRow,
  check,
  ConformanceFailure,
  REQUEST_DEADLINE_MS,
  errorCode,
  expectCode,
  invalidActions,
  RawConnection,
  stateOf,
  valuesEqual,
} from './harness.ts';
import { REFERENCE_CASES } from './cases/reference.ts';
import { SESSION_CASES } from './cases/sessions.ts';
import { LIFECYCLE_CASES } from './cases/lifecycle.ts';
import { WIRE_CASES } from './cases/wire.ts';
import type { CaseContext, CaseResult, ConformanceCase, ConformanceTarget } from './harness.ts';

export { ConformanceFailure, RawConnection, valuesEqual } from './harness.ts';
export type { CaseContext, CaseResult, ConformanceCase, ConformanceTarget, ServerLifecycle } from './harness.ts';

/** The conformance fuzz case's frames and seed (test/server/fuzz.test.ts runs more, and other seeds). */
const FUZZ_FRAMES = 300;
const FUZZ_SEED = 7;
/** A case still running after this long fails (a server that stops answering cannot hang the suite). */
const CASE_DEADLINE_MS = 180_000;

/**
 * What a batch of this space must look like: the row shape of a space whose values stack, a map of
 * per-key forms for a Dict, or 'any' (an array, or stacked when the values happen to agree).
 */
type BatchForm = readonly number[] | 'any' | { [key: string]: BatchForm };

function batchForm(space: Space): BatchForm {
  if (space.type === 'box') return space.shape;
  if (space.type === 'discrete') return [];
  if (space.type === 'multi_discrete') return space.nvec.shape;
  if (space.type === 'multi_binary') return space.n;
  if (space.type !== 'dict' || Object.keys(space.spaces).length === 0) return 'any';
  return Object.fromEntries(Object.entries(space.spaces).map(([key, sub]) => [key, batchForm(sub)]));
}

/** Why `obs` is not `n` sessions' observations in the batched form `form` (null when it is). */
function batchFormError(obs: unknown, form: BatchForm, n: number, path: string): string | null {
  const what = Array.isArray(obs) ? 'an array' : obs instanceof Tensor ? `a tensor of shape [${obs.shape.join(', ')}]` : typeof obs;
  if (form === 'any') return batchLength(obs) === n ? null : `${path} is ${what}, not a batch of ${n}`;
  if (Array.isArray(form)) {
    const want = [n, ...(form as readonly number[])];
    const ok = obs instanceof Tensor && obs.shape.length === want.length && want.every((d, i) => obs.shape[i] === d);
    return ok ? null : `${path} is ${what}, not a tensor of shape [${want.join(', ')}]`;
  }
  if (!isPlainObject(obs)) return `${path} is ${what}, not a map of per-key batches`;
  for (const [key, sub] of Object.entries(form as Record<string, BatchForm>)) {
    const wrong = batchFormError(obs[key], sub, n, `${path}.${key}`);
    if (wrong) return wrong;
  }
  return null;
}

async function runEpisode(env: RemoteEnv, maxSteps: number, rng: Random): Promise<{ steps: number; terminated: boolean; truncated: boolean } | null> {
  for (let i = 1; i <= maxSteps; i++) {
    const r = await env.step(sample(env.actionSpace, rng));
    check(typeof r.terminated === 'boolean' && typeof r.truncated === 'boolean', 'terminated and truncated must be booleans');
    check(typeof r.reward === 'number' && Number.isFinite(r.reward), `reward must be a finite number, got ${r.reward}`);
    if (r.terminated || r.truncated) return { steps: i, terminated: r.terminated, truncated: r.truncated };
  }
  return null;
}

/** Makes two sessions stepped in one frame and steps them randomly until an episode ends (or gives up). */
async function batchUntilAnEnd(ctx: CaseContext, mode: 'next_step' | 'same_step' | 'disabled', seed: number) {
  const c = await ctx.client();
  const vec = await c.makeVec(ctx.envId, 2, { autoresetMode: mode });
  await vec.reset({ seed });
  const rng = new Random(seed);
  const act = () => vec.envs.map((e) => sample(e.actionSpace, rng));
  for (let i = 0; i < ctx.maxSteps; i++) {
    const out = await vec.step(act());
    const ended = out.terminations.map((t, k) => t || out.truncations[k] === true);
    if (ended.some(Boolean)) return { vec, out, ended, act };
  }
  return null;
}

const NO_END = (ctx: CaseContext): CaseResult => ({ status: 'skip', reason: `no episode ended within ${ctx.maxSteps} batched steps` });

// ---------------------------------------------------------------------------------------------
// The cases

/**
 * What a black-box check cannot know about an arbitrary env but the reference envs promise:
 * the everything-env's float boxes have one infinite side (bounds kept exactly, not ±3.4e38) and
 * its reward is minus the distance it reports; CartPole's reward is 1 per step (Gymnasium's).
 * Other envs skip these cases, with the reason printed.
 */
const REFERENCE_ENVS: Record<string, (env: RemoteEnv) => Promise<void>> = {
  'gymwire/Conformance-v0': async (env) => {
    const spaces = (env.observationSpace as { spaces?: Record<string, Space> }).spaces ?? {};
    for (const dtype of ['float16', 'float32', 'float64']) {
      const b = spaces[`box_${dtype}`] as { low: Tensor; high: Tensor } | undefined;
      check(b !== undefined, `box_${dtype} missing from the observation space`);
      check(
        b.low.at(0) === -Infinity && b.high.at(0) === Infinity,
        `box_${dtype} bounds [${b.low.at(0)}, ${b.high.at(0)}] should be [-inf, inf]: infinite bounds must stay infinite`,
      );
    }
    await env.reset({ seed: 3 });
    const s = await env.step(Tensor.from('float32', [2], [0.5, -0.5]));
    const distance = (s.info as { distance?: unknown }).distance;
    check(typeof distance === 'number' && distance > 0, `info.distance should be a positive number, got ${previewValue(distance)}`);
    check(s.reward === -distance, `reward ${s.reward} should be minus info.distance (${-distance})`);
  },
  'gymwire/CartPole-v1': async (env) => {
    await env.reset({ seed: 0 });
    const s = await env.step(0);
    check(s.reward === 1, `CartPole's reward is 1 per step (Gymnasium's CartPole-v1), got ${s.reward}`);
  },
};

export const CASES: ConformanceCase[] = [
  {
    name: 'reference envs: exact bounds and rewards where the env is known',
    covers: ['P-SPACE-2', 'P-STEP-5'],
    async run(ctx) {
      const reference = REFERENCE_ENVS[ctx.envId];
      if (!reference) return { status: 'skip', reason: `no reference values for ${ctx.envId} (known: ${Object.keys(REFERENCE_ENVS).join(', ')})` };
      const c = await ctx.client();
      await reference(await c.make(ctx.envId));
      return { status: 'pass' };
    },
  },
  {
    name: 'handshake: welcome carries version, limits and a resume token',
    covers: ['P-HELLO-3'],
    perServer: true,
    async run(ctx) {
      const c = await ctx.client();
      check(c.welcome.protocol_version === PROTOCOL_VERSION, `protocol_version ${c.welcome.protocol_version}`);
      check(c.welcome.resume_token.length >= 16, 'resume token too short to be unguessable');
      check(c.limits.max_frame_bytes > 0 && c.limits.max_sessions > 0, 'limits missing');
    },
  },
  {
    name: 'handshake: version mismatch is refused with ENV_ERR_VERSION_MISMATCH',
    covers: ['P-HELLO-4', 'E-VERSION_MISMATCH-1', 'P-REQ-1'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      raw.send({ id: 1, type: 'hello', protocol_version: 999, token: ctx.target.token });
      const msg = await raw.next();
      check(errorCode(msg) === 'ENV_ERR_VERSION_MISMATCH', `got ${JSON.stringify(msg)}`);
      check(msg.id === 1, `the refusal carries id ${JSON.stringify(msg.id)}, not the hello's 1`);
      check(Array.isArray((msg.error as { details: { supported: unknown } }).details.supported), 'details.supported missing');
      const code = await raw.closedWith();
      check(code === 1002, `after a version mismatch the server closes with 1002, got ${code === null ? 'no close' : code}`);
    },
  },
  {
    name: 'handshake: requests before hello get ENV_ERR_HANDSHAKE_REQUIRED',
    covers: ['P-HELLO-1', 'E-HANDSHAKE_REQUIRED-1'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      raw.send({ id: 1, type: 'list_envs' });
      const msg = await raw.next();
      check(errorCode(msg) === 'ENV_ERR_HANDSHAKE_REQUIRED' && msg.id === 1, `got ${JSON.stringify(msg)}`);
    },
  },
  {
    name: 'bad frames get typed errors and the connection stays usable',
    covers: ['P-FRAME-1', 'P-FRAME-8', 'P-TENSOR-2', 'P-REQ-5', 'E-BAD_FRAME-1', 'E-ANSWER-1', 'E-ANSWER-3'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      await raw.hello(ctx.target.token);
      const expect = async (what: string, code: string, send: () => void, id: number | null = null) => {
        send();
        const msg = await raw.next();
        check(errorCode(msg) === code, `${what}: expected ${code}, got ${JSON.stringify(msg).slice(0, 200)}`);
        if (id !== null) check(msg.id === id, `${what}: the answer carries id ${JSON.stringify(msg.id)}, not the request's ${id}`);
      };
      await expect('not msgpack', 'ENV_ERR_BAD_FRAME', () => raw.sendBytes(new Uint8Array([0xc1, 0xff, 0x00])));
      await expect('not a map', 'ENV_ERR_INVALID_MESSAGE', () => raw.send([1, 2, 3]));
      await expect('unknown type', 'ENV_ERR_UNKNOWN_TYPE', () => raw.send({ id: 2, type: 'teleport' }), 2);
      await expect('schema violation', 'ENV_ERR_INVALID_MESSAGE', () => raw.send({ id: 3, type: 'make', env_id: 42 }), 3);
      await expect('unknown field', 'ENV_ERR_INVALID_MESSAGE', () => raw.send({ id: 5, type: 'ping', teleport: true }), 5);
      // {id: 4, t: <a float32 tensor header declaring 4 elements with 3 bytes of data>}
      await expect(
        'tensor bytes not matching dtype and shape',
        'ENV_ERR_BAD_TENSOR',
        () => raw.sendBytes(new Uint8Array([0x82, 0xa2, 0x69, 0x64, 0x04, 0xa1, 0x74, 0xc7, 0x09, 0x01, 10, 1, 4, 0, 0, 0, 1, 2, 3])),
        4,
      );
      // {id: 6, t: <a tensor with dtype code 200>}
      await expect(
        'unknown dtype code',
        'ENV_ERR_BAD_TENSOR',
        () => raw.sendBytes(new Uint8Array([0x82, 0xa2, 0x69, 0x64, 0x06, 0xa1, 0x74, 0xd5, 0x01, 200, 0])),
        6,
      );
      if (raw.transport.sendText) await expect('a text frame', 'ENV_ERR_BAD_FRAME', () => raw.transport.sendText!('{"id": 7, "type": "ping"}'));
      raw.send({ id: 9, type: 'ping', payload: 'still here' });
      const pong = await raw.next();
      check(pong.type === 'result' && pong.id === 9, `connection unusable after bad frames: ${JSON.stringify(pong)}`);
    },
  },
  {
    name: 'fuzzed frames: one typed answer each, no server fault, the connection and other clients unaffected',
    covers: ['E-ANSWER-2', 'E-ANSWER-3'],
    perServer: true,
    async run(ctx) {
      const bystander = await ctx.client();
      const theirs = await bystander.make(ctx.envId);
      await theirs.reset({ seed: 1 });
      const raw = await ctx.raw();
      await raw.hello(ctx.target.token);
      let id = 1;
      const own: string[] = [];
      for (let i = 0; i < 2; i++) {
        raw.send({ id: id++, type: 'make', env_id: ctx.envId, kwargs: {} });
        const made = await raw.next();
        check(made.type === 'result', `make failed: ${JSON.stringify(made.error)}`);
        own.push((made.result as { session_id: string }).session_id);
        raw.send({ id: id++, type: 'reset', session_id: own[i], seed: i });
        check((await raw.next()).type === 'result', "reset of the fuzzer's session failed");
      }
      const rng = new Random(FUZZ_SEED);
      const action = sample(theirs.actionSpace, rng);
      for (let i = 0; i < FUZZ_FRAMES; i++) {
        raw.sendBytes(fuzzFrame(rng, own, id++, action));
        const answer = await raw.next();
        check(answer.type === 'result' || answer.type === 'error', `frame ${i} was answered with a ${String(answer.type)}`);
        if (answer.type === 'error') {
          const { code, message } = answer.error as { code: unknown; message: string };
          check(isErrorCode(code), `frame ${i}: ${String(code)} is not a protocol error code`);
          // Bad input is the client's fault: the server and the env must say so, not fault.
          check(
            code !== 'ENV_ERR_INTERNAL' && code !== 'ENV_ERR_ENV_FAILURE',
            `frame ${i} (seed ${FUZZ_SEED}) made the server report its own fault: ${code}: ${message}`,
          );
        }
        if (i % 50 === 0) {
          const r = await theirs.step(sample(theirs.actionSpace, rng));
          if (r.terminated || r.truncated) await theirs.reset();
        }
      }
      check(!raw.closed, 'the server closed the connection');
      raw.send({ id, type: 'ping', payload: 'still here' });
      check((await raw.next()).type === 'result', 'the connection is unusable after the fuzzed frames');
    },
  },
  {
    name: 'list_envs includes the env; unknown env and bad kwargs are refused',
    covers: ['P-MAKE-1', 'E-UNKNOWN_ENV-1'],
    async run(ctx) {
      const c = await ctx.client();
      const envs = await c.listEnvs();
      check(
        envs.some((e) => e.id === ctx.envId),
        `${ctx.envId} missing from list_envs`,
      );
      const err = await expectCode(c.make('gymwire/NoSuchEnv-v0'), 'ENV_ERR_UNKNOWN_ENV', 'unknown env');
      check(Array.isArray(err.details.available), 'details.available missing');
      await expectCode(c.make(ctx.envId, { no_such_kwarg_for_conformance: 1 }), 'ENV_ERR_INVALID_KWARGS', 'bad kwargs');
    },
  },
  {
    name: 'step before reset is ENV_ERR_RESET_NEEDED',
    covers: ['P-STEP-2', 'E-RESET_NEEDED-1'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await expectCode(env.step(sample(env.actionSpace, new Random(0))), 'ENV_ERR_RESET_NEEDED', 'step before reset');
    },
  },
  {
    name: 'observations lie in the declared space with exact dtypes',
    covers: ['P-SPACE-1', 'P-TENSOR-1', 'P-STEP-1'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      const rng = new Random(1);
      const r = await env.reset({ seed: 1 });
      const err = contains(env.observationSpace, r.obs);
      check(err === null, `reset observation: ${err}`);
      check(isPlainObject(r.info), 'reset info must be a map');
      for (let i = 0; i < 20; i++) {
        const s = await env.step(sample(env.actionSpace, rng));
        const e = contains(env.observationSpace, s.obs);
        check(e === null, `step ${i} observation: ${e}`);
        check(isPlainObject(s.info), 'step info must be a map');
        if (s.terminated || s.truncated) break;
      }
    },
  },
  {
    name: 'seeded determinism: same seed and actions give the same observations and rewards',
    covers: ['P-RESET-1'],
    async run(ctx) {
      const c = await ctx.client();
      const [a, b] = await Promise.all([c.make(ctx.envId), c.make(ctx.envId)]);
      const ra = await a.reset({ seed: 123 });
      const rb = await b.reset({ seed: 123 });
      check(valuesEqual(ra.obs, rb.obs), 'reset(seed=123) gave different observations');
      const rngA = new Random(7);
      const rngB = new Random(7);
      for (let i = 0; i < 10; i++) {
        const sa = await a.step(sample(a.actionSpace, rngA));
        const sb = await b.step(sample(b.actionSpace, rngB));
        check(valuesEqual(sa.obs, sb.obs), `step ${i}: observations differ`);
        check(Object.is(sa.reward, sb.reward), `step ${i}: rewards differ (${sa.reward} vs ${sb.reward})`);
        check(sa.terminated === sb.terminated && sa.truncated === sb.truncated, `step ${i}: flags differ`);
        if (sa.terminated || sa.truncated) break;
      }
      await a.reset({ seed: 456 });
      const again = await a.reset({ seed: 123 });
      check(valuesEqual(again.obs, ra.obs), 'reset(seed=123) after other episodes differs from the first');
    },
  },
  {
    name: 'invalid actions get ENV_ERR_INVALID_ACTION and the session stays usable',
    covers: ['P-STEP-4'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 3 });
      for (const { what, action } of invalidActions(env.actionSpace)) {
        await expectCode(env.step(action), 'ENV_ERR_INVALID_ACTION', `action ${what}`);
      }
      const s = await env.step(sample(env.actionSpace, new Random(3)));
      check(typeof s.reward === 'number', 'valid step after invalid actions failed');
    },
  },
  {
    name: 'episodes end with terminated or truncated; stepping on needs a reset',
    covers: ['P-STEP-2', 'P-STEP-3', 'P-STEP-5'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 5 });
      const end = await runEpisode(env, ctx.maxSteps, new Random(5));
      if (!end) return { status: 'skip', reason: `no episode ended within ${ctx.maxSteps} random steps` };
      check(!(end.terminated && end.truncated) || end.steps === env.maxEpisodeSteps, 'terminated and truncated together before the time limit');
      if (end.truncated && !end.terminated && env.maxEpisodeSteps !== null)
        check(end.steps === env.maxEpisodeSteps, `truncated at step ${end.steps}, limit ${env.maxEpisodeSteps}`);
      await expectCode(env.step(sample(env.actionSpace, new Random(0))), 'ENV_ERR_RESET_NEEDED', 'step after the episode ended');
      await env.reset();
      return { status: 'pass' };
    },
  },
  {
    name: 'batched step, autoreset next_step: the step after an end resets with reward 0',
    covers: ['P-BATCH-4'],
    async run(ctx) {
      const run = await batchUntilAnEnd(ctx, 'next_step', 11);
      if (!run) return NO_END(ctx);
      const next = await run.vec.step(run.act());
      run.ended.forEach((e, k) => {
        if (!e) return;
        check(next.rewards[k] === 0, `session ${k}: reward after autoreset is ${next.rewards[k]}, not 0`);
        check(!next.terminations[k] && !next.truncations[k], `session ${k}: flags set on the autoreset step`);
      });
      return { status: 'pass' };
    },
  },
  {
    name: 'batched step, autoreset same_step: final_obs and final_info with masks',
    covers: ['P-BATCH-5'],
    async run(ctx) {
      const run = await batchUntilAnEnd(ctx, 'same_step', 12);
      if (!run) return NO_END(ctx);
      const { out, vec } = run;
      run.ended.forEach((e, k) => {
        check(out.infos._final_obs?.[k] === e, `session ${k}: _final_obs mask is ${out.infos._final_obs?.[k]}, episode ended: ${e}`);
        if (e) check(contains(vec.singleObservationSpace, out.infos.final_obs![k]) === null, 'final_obs outside the observation space');
      });
      // The session was reset in the same call: it steps on without a reset.
      await vec.step(run.act());
      return { status: 'pass' };
    },
  },
  {
    name: 'batched step, autoreset disabled: the caller resets ended sessions by mask',
    covers: ['P-BATCH-6'],
    async run(ctx) {
      const run = await batchUntilAnEnd(ctx, 'disabled', 13);
      if (!run) return NO_END(ctx);
      let refused = false;
      try {
        await run.vec.step(run.act());
      } catch {
        refused = true;
      }
      check(refused, 'stepping an ended session without a reset was accepted in disabled mode');
      // The refused batch failed only the ended sessions; the others stepped on.
      await run.vec.reset({ mask: run.ended });
      await run.vec.step(run.act());
      return { status: 'pass' };
    },
  },
  {
    name: 'batched reset and step agree with single-session reset and step',
    covers: ['P-BATCH-1', 'P-BATCH-7'],
    async run(ctx) {
      const c = await ctx.client();
      const vec = await c.makeVec(ctx.envId, 2, { autoresetMode: 'disabled' });
      const single = await c.make(ctx.envId);
      const r = await vec.reset({ seed: 21 });
      const s = await single.reset({ seed: 21 });
      const firstObs = batchRow(r.obs, 0, vec.singleObservationSpace);
      check(valuesEqual(firstObs, s.obs), 'batched reset observation differs from a single reset with the same seed');
      const rng = new Random(21);
      const action = sample(single.actionSpace, rng);
      const out = await vec.step([action, action]);
      const one = await single.step(action);
      check(out.rewards[0] === one.reward, `batched reward ${out.rewards[0]} != single ${one.reward}`);
      const stepped = batchRow(out.obs, 0, vec.singleObservationSpace);
      check(valuesEqual(stepped, one.obs), 'the batched step observation differs from a single step with the same seed and action');
    },
  },
  {
    name: 'tools: listed as function schemas, unknown tools and bad arguments refused',
    covers: ['P-TOOLS-1', 'P-TOOLS-2', 'E-UNKNOWN_TOOL-1', 'E-ISSUES-1'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      const tools = await env.listTools();
      for (const t of tools) {
        check(t.type === 'function' && typeof t.function.name === 'string' && typeof t.function.parameters === 'object', `malformed tool ${JSON.stringify(t)}`);
      }
      const unknownTool = await expectCode(env.callTool('no_such_tool_for_conformance', {}), 'ENV_ERR_UNKNOWN_TOOL', 'unknown tool');
      check(Array.isArray(unknownTool.details.tools), `ENV_ERR_UNKNOWN_TOOL without details.tools: ${previewValue(unknownTool.details, 200)}`);
      const withRequired = tools.find((t) => Array.isArray(t.function.parameters.required) && (t.function.parameters.required as unknown[]).length > 0);
      if (!withRequired) return tools.length ? { status: 'pass' } : { status: 'skip', reason: 'the env has no tools' };
      await env.reset({ seed: 1 });
      const missing = await expectCode(
        env.callTool(withRequired.function.name, {}),
        'ENV_ERR_INVALID_TOOL_ARGS',
        `${withRequired.function.name} without its required arguments`,
      );
      check(
        Array.isArray(missing.details.issues) && missing.details.issues.length > 0,
        `ENV_ERR_INVALID_TOOL_ARGS without details.issues: ${previewValue(missing.details, 200)}`,
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'get_state/set_state reproduce the same future',
    covers: ['P-STATE-1', 'P-STATE-2', 'E-INVALID_STATE-1'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 31 });
      const state = await stateOf(env);
      if (!state) return { status: 'skip', reason: 'the env does not support state' };
      const rng = new Random(31);
      const actions = Array.from({ length: 5 }, () => sample(env.actionSpace, rng));
      const play = async () => {
        const out: unknown[] = [];
        for (const a of actions) {
          const s = await env.step(a);
          out.push([s.obs, s.reward, s.terminated, s.truncated]);
          if (s.terminated || s.truncated) break;
        }
        return out;
      };
      const first = await play();
      await env.setState(state);
      const second = await play();
      check(valuesEqual(first, second), 'the future after set_state differs from the future after get_state');
      await expectCode(env.setState(new Uint8Array([1, 2, 3])), 'ENV_ERR_INVALID_STATE', 'set_state with garbage bytes');
      return { status: 'pass' };
    },
  },
  {
    name: 'close is idempotent and a closed session is unknown',
    covers: ['P-CLOSE-1'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 1 });
      const first = await c.request('close', { session_id: env.sessionId });
      const second = await c.request('close', { session_id: env.sessionId });
      check(first.closed && !second.closed, `close answers ${first.closed}, ${second.closed}`);
      await expectCode(env.step(sample(env.actionSpace, new Random(0))), 'ENV_ERR_UNKNOWN_SESSION', 'step after close');
    },
  },
  {
    name: 'sessions are private to the client that made them',
    covers: ['P-MAKE-2', 'E-UNKNOWN_SESSION-1'],
    async run(ctx) {
      const a = await ctx.client();
      const b = await ctx.client();
      const env = await a.make(ctx.envId);
      const err = await expectCode(b.request('reset', { session_id: env.sessionId }), 'ENV_ERR_UNKNOWN_SESSION', "another client's session");
      check(err.details.session_id === env.sessionId, `ENV_ERR_UNKNOWN_SESSION names session ${previewValue(err.details.session_id)}, not the one asked for`);
    },
  },
  {
    name: 'limits: oversize frames and too many sessions are refused with clear errors',
    covers: ['P-FRAME-3', 'P-LIMIT-1', 'E-FRAME_TOO_LARGE-1', 'E-TOO_MANY_SESSIONS-1'],
    perServer: true,
    async run(ctx) {
      const c = await ctx.client();
      const limits = c.limits;
      const probed: string[] = [];
      if (limits.max_frame_bytes <= 16 * 1024 * 1024) {
        const raw = await ctx.raw();
        await raw.hello(ctx.target.token);
        raw.send({ id: 5, type: 'ping', payload: new Uint8Array(limits.max_frame_bytes + 1) });
        const msg = await raw.next(15_000);
        check(errorCode(msg) === 'ENV_ERR_FRAME_TOO_LARGE' && msg.id === 5, `oversize frame: ${JSON.stringify(msg).slice(0, 200)}`);
        const details = (msg.error as { details: { size?: unknown } }).details;
        check(
          typeof details.size === 'number' && details.size > limits.max_frame_bytes,
          `ENV_ERR_FRAME_TOO_LARGE without the frame's details.size: ${previewValue(details, 200)}`,
        );
        probed.push('frame');
      }
      if (limits.max_sessions_per_client <= 64) {
        const made = await Promise.allSettled(Array.from({ length: limits.max_sessions_per_client + 1 }, () => c.make(ctx.envId)));
        const refused = made.filter((m) => m.status === 'rejected');
        check(refused.length === 1, `${refused.length} makes refused past max_sessions_per_client=${limits.max_sessions_per_client}`);
        const reason = (refused[0] as PromiseRejectedResult).reason;
        check(reason instanceof ProtocolError && reason.code === 'ENV_ERR_TOO_MANY_SESSIONS', `refused with ${String(reason)}`);
        check(
          reason.details.limit === 'max_sessions_per_client' && reason.details.max === limits.max_sessions_per_client,
          `ENV_ERR_TOO_MANY_SESSIONS details ${previewValue(reason.details, 200)} do not name the limit and its value`,
        );
        probed.push('sessions');
      }
      const unprobed = [
        ...(probed.includes('frame') ? [] : [`max_frame_bytes ${limits.max_frame_bytes} > 16 MiB`]),
        ...(probed.includes('sessions') ? [] : [`max_sessions_per_client ${limits.max_sessions_per_client} > 64`]),
      ];
      if (!probed.length)
        return { status: 'skip', reason: `limits too large to probe cheaply: ${unprobed.join('; ')} (start the server with smaller limits to probe them)` };
      return { status: 'pass' };
    },
  },
  {
    name: 'reconnect: sessions resume and a retried step is applied once',
    covers: ['P-RESUME-1', 'P-RESUME-2'],
    async run(ctx) {
      const c = await ctx.client();
      const [a, b] = await Promise.all([c.make(ctx.envId), c.make(ctx.envId)]);
      await a.reset({ seed: 41 });
      await b.reset({ seed: 41 });
      const rng = new Random(41);
      const actions = [sample(a.actionSpace, rng), sample(a.actionSpace, rng)];
      // Send a step and drop the socket at once: the step may or may not have run; either way it must run once.
      const pending = a.step(actions[0]);
      c.simulateConnectionLoss();
      const a1 = await pending;
      if (a1.terminated || a1.truncated) return { status: 'skip', reason: 'episode ended on its first step' };
      const a2 = await a.step(actions[1]);
      const b1 = await b.step(actions[0]);
      const b2 = await b.step(actions[1]);
      check(c.welcome.resumed, 'the reconnect did not resume the client');
      check(
        valuesEqual(a1.obs, b1.obs) && valuesEqual(a2.obs, b2.obs) && a2.reward === b2.reward,
        'the session after the reconnect diverged from its twin: a step was lost or applied twice',
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'ping: the payload comes back exactly; no payload sent, none answered',
    covers: ['P-REQ-3'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      await raw.hello(ctx.target.token);
      const payload = { nested: [1, 'two', null, 2.5], bytes: new Uint8Array([1, 2, 3]) };
      raw.send({ id: 1, type: 'ping', payload });
      const echo = await raw.next();
      check(
        echo.type === 'result' && echo.id === 1 && valuesEqual((echo.result as { payload: unknown }).payload, payload),
        `ping payload not echoed: ${previewValue(echo, 200)}`,
      );
      raw.send({ id: 2, type: 'ping' });
      const bare = await raw.next();
      const result = bare.result as Record<string, unknown>;
      check(bare.type === 'result' && typeof result.server_time_ms === 'number', `ping without payload: ${previewValue(bare, 200)}`);
      // msgpackr reads an absent value (ext type 0, which the protocol does not define) back as undefined.
      check(
        !Object.hasOwn(result, 'payload') || result.payload !== undefined,
        'ping without payload answered with a payload the protocol cannot name (msgpack ext type 0)',
      );
    },
  },
  {
    name: 'request ids: answers remembered by id and type until acked; reused and acked ids refused',
    covers: ['P-REQ-1', 'P-REQ-2', 'P-RESUME-3', 'P-RESUME-5', 'P-RESUME-6', 'P-RESUME-7'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      await raw.hello(ctx.target.token);
      raw.send({ id: 1, type: 'make', env_id: ctx.envId });
      const made = await raw.next();
      check(made.type === 'result', `make failed: ${previewValue(made.error, 200)}`);
      const session_id = (made.result as { session_id: string }).session_id;
      raw.send({ id: 2, type: 'reset', session_id, seed: 1 });
      const reset = await raw.next();
      check(reset.type === 'result', `reset failed: ${previewValue(reset.error, 200)}`);
      raw.send({ id: 10, type: 'reset', session_id, seed: 2 });
      const first = await raw.next();
      raw.send({ id: 10, type: 'reset', session_id, seed: 2 });
      const again = await raw.next();
      check(valuesEqual(first, again), 'a resent request id was not answered with the remembered answer');
      raw.send({ id: 10, type: 'close', session_id });
      const reused = await raw.next();
      check(
        errorCode(reused) === 'ENV_ERR_INVALID_MESSAGE' && reused.id === 10,
        `an id reused for another type: expected ENV_ERR_INVALID_MESSAGE, got ${previewValue(reused, 200)}`,
      );
      raw.send({ id: 5, type: 'reset', session_id, seed: 3 });
      const hole = await raw.next();
      check(
        errorCode(hole) === 'ENV_ERR_REPLY_EXPIRED' && hole.id === 5,
        `a never-used id below the highest: expected ENV_ERR_REPLY_EXPIRED, got ${previewValue(hole, 200)}`,
      );
      raw.send({ id: 11, type: 'ping', ack: 10 });
      check((await raw.next()).type === 'result', 'ping with ack failed');
      raw.send({ id: 10, type: 'reset', session_id, seed: 2 });
      const acked = await raw.next();
      check(
        errorCode(acked) === 'ENV_ERR_INVALID_MESSAGE' && acked.id === 10,
        `an id at or below the ack: expected ENV_ERR_INVALID_MESSAGE, got ${previewValue(acked, 200)}`,
      );
    },
  },
  {
    name: 'resume: sessions come back within the grace period and are gone after it',
    covers: ['P-RESUME-1', 'P-RESUME-8', 'P-LIMIT-5'],
    perServer: true,
    async run(ctx) {
      const first = await ctx.raw();
      const welcome = (await first.hello(ctx.target.token)).result as { resume_token: string; limits: { resume_grace_ms: number } };
      first.send({ id: 1, type: 'make', env_id: ctx.envId });
      const session_id = ((await first.next()).result as { session_id: string }).session_id;
      first.close();
      await first.closedWith();
      const back = await ctx.raw();
      back.send({
        id: 2,
        type: 'hello',
        protocol_version: PROTOCOL_VERSION,
        client_name: CONFORMANCE_CLIENT_NAME,
        resume_token: welcome.resume_token,
        ...(ctx.target.token ? { token: ctx.target.token } : {}),
      });
      const resumed = (await back.next()).result as { resumed: boolean; sessions: string[]; resume_token: string };
      check(resumed.resumed && resumed.sessions.includes(session_id), `resume within the grace period: ${previewValue(resumed, 200)}`);
      const grace = welcome.limits.resume_grace_ms;
      if (grace > 3000)
        return {
          status: 'skip',
          reason: `resume within the grace period passed; expiry not probed: resume_grace_ms is ${grace} ms (start the server with --resume-grace 1s to probe it)`,
        };
      back.close();
      await back.closedWith();
      await new Promise((r) => setTimeout(r, grace * 2 + 500));
      const late = await ctx.raw();
      late.send({
        id: 3,
        type: 'hello',
        protocol_version: PROTOCOL_VERSION,
        client_name: CONFORMANCE_CLIENT_NAME,
        resume_token: resumed.resume_token,
        ...(ctx.target.token ? { token: ctx.target.token } : {}),
      });
      const expired = (await late.next()).result as { resumed: boolean; sessions: string[] };
      check(
        !expired.resumed && expired.sessions.length === 0,
        `resume after the grace period: expected resumed false and no sessions, got ${previewValue(expired, 200)}`,
      );
      return { status: 'pass' };
    },
  },
  {
    name: 'auth: a wrong token gets ENV_ERR_UNAUTHORIZED and close 1008',
    covers: ['P-HELLO-5', 'E-UNAUTHORIZED-1'],
    perServer: true,
    async run(ctx) {
      if (!ctx.target.token) return { status: 'skip', reason: 'no token given (pass --token to probe a server that requires one)' };
      const raw = await ctx.raw();
      raw.send({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: CONFORMANCE_CLIENT_NAME, token: `${ctx.target.token}-wrong` });
      const msg = await raw.next();
      check(errorCode(msg) === 'ENV_ERR_UNAUTHORIZED' && msg.id === 1, `wrong token: ${previewValue(msg, 200)}`);
      const code = await raw.closedWith();
      check(code === 1008, `after a wrong token the server closes with 1008, got ${code === null ? 'no close' : code}`);
      return { status: 'pass' };
    },
  },
  {
    name: 'retries: a step cut off by a dropped connection runs once',
    covers: ['P-RESUME-2'],
    async run(ctx) {
      // The transport closes right after it sends its first step: the server reads the step before
      // the close, so the step runs and its answer is lost; the client resumes and resends the same id.
      let cut = false;
      const cutting: Connector = async () => {
        const t = await ctx.target.connector();
        if (cut) return t;
        // After the cut nothing more arrives on this connection, as when a cable is pulled: the step's answer is lost.
        let dead = false;
        const wrapped: ClientTransport = {
          send(frame) {
            t.send(frame);
            if (!cut && (decode(frame) as { type?: unknown }).type === 'step') {
              cut = dead = true;
              t.close();
            }
          },
          close: () => t.close(),
        };
        t.onmessage = (frame) => {
          if (!dead) wrapped.onmessage?.(frame);
        };
        t.onclose = (code, reason) => wrapped.onclose?.(code, reason);
        return wrapped;
      };
      const c = await ctx.client({ connector: cutting });
      const twins = await ctx.client();
      const [a, b] = [await c.make(ctx.envId), await twins.make(ctx.envId)];
      await a.reset({ seed: 43 });
      await b.reset({ seed: 43 });
      const rng = new Random(43);
      const actions = [sample(a.actionSpace, rng), sample(a.actionSpace, rng)];
      const a1 = await a.step(actions[0]);
      check(cut, 'the connection was not cut');
      check(c.welcome.resumed, 'the reconnect did not resume the client');
      const b1 = await b.step(actions[0]);
      check(valuesEqual(a1.obs, b1.obs) && a1.reward === b1.reward, "the answer to the retried step differs from its twin's first step");
      if (a1.terminated || a1.truncated) return { status: 'pass' };
      const [a2, b2] = [await a.step(actions[1]), await b.step(actions[1])];
      check(valuesEqual(a2.obs, b2.obs) && a2.reward === b2.reward, 'the session diverged from its twin after the retry: the cut step ran twice');
      return { status: 'pass' };
    },
  },
  {
    name: 'invalid actions leave the session unchanged',
    covers: ['P-STEP-4', 'E-INVALID_ACTION-1'],
    async run(ctx) {
      const c = await ctx.client();
      const [a, b] = [await c.make(ctx.envId), await c.make(ctx.envId)];
      await a.reset({ seed: 51 });
      await b.reset({ seed: 51 });
      for (const { what, action } of invalidActions(a.actionSpace)) await expectCode(a.step(action), 'ENV_ERR_INVALID_ACTION', `action ${what}`);
      const rng = new Random(51);
      for (let i = 0; i < 5; i++) {
        const action = sample(a.actionSpace, rng);
        const [sa, sb] = [await a.step(action), await b.step(action)];
        check(valuesEqual(sa.obs, sb.obs) && sa.reward === sb.reward, `step ${i}: a session that was sent refused actions differs from its twin that was not`);
        if (sa.terminated || sa.truncated) break;
      }
    },
  },
  {
    name: 'reset with a null seed continues the RNG stream instead of reseeding',
    covers: ['P-RESET-2'],
    async run(ctx) {
      const c = await ctx.client();
      const nulls = async (seed: number) => {
        const env = await c.make(ctx.envId);
        const seeded = (await env.reset({ seed })).obs;
        const after: unknown[] = [];
        for (let i = 0; i < 4; i++) after.push((await env.reset({ seed: null })).obs);
        return { seeded, after };
      };
      const [x, y] = [await nulls(61), await nulls(62)];
      if (valuesEqual(x.seeded, y.seeded)) return { status: 'skip', reason: 'the env resets to the same observation whatever the seed' };
      check(!x.after.every((o) => valuesEqual(o, x.seeded)), 'reset(seed=null) returned the seeded first observation every time: it reseeded');
      check(!valuesEqual(x.after, y.after), 'reset(seed=null) gives the same episodes after different seeds: it reseeded');
      const z = await nulls(61);
      check(valuesEqual(z.after, x.after), 'reset(seed=null) after the same seed gave different episodes: the stream is not deterministic');
      return { status: 'pass' };
    },
  },
  {
    name: 'batches are atomic: one refused action refuses the whole batch and steps nothing',
    covers: ['P-BATCH-2'],
    async run(ctx) {
      const c = await ctx.client();
      const vec = await c.makeVec(ctx.envId, 2, { autoresetMode: 'disabled' });
      const twin = await c.makeVec(ctx.envId, 2, { autoresetMode: 'disabled' });
      await vec.reset({ seed: 71 });
      await twin.reset({ seed: 71 });
      const rng = new Random(71);
      const good = vec.envs.map((e) => sample(e.actionSpace, rng));
      const bad = invalidActions(vec.envs[0]!.actionSpace)[0]!.action;
      await expectCode(
        c.request('step_batch', { session_ids: vec.sessionIds, actions: [good[0], bad], autoreset_mode: 'disabled' }),
        'ENV_ERR_INVALID_ACTION',
        'a batch with one invalid action',
      );
      const [out, ref] = [await vec.step(good), await twin.step(good)];
      check(valuesEqual(out.obs, ref.obs) && out.rewards.every((r, i) => r === ref.rewards[i]), 'a refused batch stepped some of its sessions');
    },
  },
  {
    name: 'batches stack tensor observations into one tensor over sessions, and a Dict key by key',
    covers: ['P-BATCH-3'],
    async run(ctx) {
      const c = await ctx.client();
      const vec = await c.makeVec(ctx.envId, 2, { autoresetMode: 'next_step' });
      const space = vec.singleObservationSpace;
      const form = batchForm(space);
      if (form === 'any') return { status: 'skip', reason: `observations are a ${space.type} space, which is not stacked` };
      const r = await vec.reset({ seed: 81 });
      const resetWrong = batchFormError(r.obs, form, 2, 'obs');
      check(resetWrong === null, `reset_batch observations are not stacked over 2 sessions: ${resetWrong}`);
      const s = await vec.step(vec.envs.map((e) => sample(e.actionSpace, new Random(81))));
      const stepWrong = batchFormError(s.obs, form, 2, 'obs');
      check(stepWrong === null, `step_batch observations are not stacked over 2 sessions: ${stepWrong}`);
      return { status: 'pass' };
    },
  },
  {
    name: 'tools: argument types are checked against the schema',
    covers: ['P-TOOLS-2'],
    async run(ctx) {
      const c = await ctx.client();
      const env = await c.make(ctx.envId);
      await env.reset({ seed: 1 });
      const wrongFor: Record<string, unknown> = {
        number: 'not a number',
        integer: 'not an integer',
        string: 12345,
        boolean: 'yes',
        array: 'not an array',
        object: 'not an object',
      };
      for (const tool of await env.listTools()) {
        const params = tool.function.parameters as { properties?: Record<string, { type?: unknown }>; required?: string[] };
        for (const [name, prop] of Object.entries(params.properties ?? {})) {
          const kind = typeof prop.type === 'string' ? prop.type : null;
          // Only a tool whose other arguments are all optional can be called with one wrong argument alone.
          if (!kind || !(kind in wrongFor) || (params.required ?? []).some((r) => r !== name)) continue;
          await expectCode(
            env.callTool(tool.function.name, { [name]: wrongFor[kind] }),
            'ENV_ERR_INVALID_TOOL_ARGS',
            `${tool.function.name}(${name}: ${JSON.stringify(wrongFor[kind])})`,
          );
          return { status: 'pass' };
        }
      }
      return { status: 'skip', reason: 'no tool has a typed argument that can be sent alone' };
    },
  },
  ...WIRE_CASES,
  ...SESSION_CASES,
  ...REFERENCE_CASES,
  ...LIFECYCLE_CASES,
];

// ---------------------------------------------------------------------------------------------
// Runner

export interface CaseReport {
  env: string;
  name: string;
  status: 'pass' | 'fail' | 'skip';
  ms: number;
  message?: string;
}

export interface RunOptions {
  envIds?: string[];
  maxSteps?: number;
  onReport?: (report: CaseReport) => void;
  /** Only cases whose name includes this. */
  filter?: string;
  /** Stop at the first failing case. */
  failFast?: boolean;
  /** How long one case may run before it fails. */
  caseDeadlineMs?: number;
  /** How long to wait for the server to drop a connection that never says hello (default 8 s: the default hello timeout of 5 s and slack). */
  helloWaitMs?: number;
}

export function targetFromUrl(url: string, token?: string): ConformanceTarget {
  return { connector: wsConnector(url), token, name: url };
}

/** Runs every case against every env (all the server lists, by default). */
export async function runConformance(target: ConformanceTarget, opts: RunOptions = {}): Promise<CaseReport[]> {
  const reports: CaseReport[] = [];
  await checkWelcome(target);
  let listed: string[];
  try {
    const lister = await connect(target.connector, { token: target.token, reconnect: false, connectTimeoutMs: WELCOME_WAIT_MS });
    listed = (await lister.listEnvs()).map((e) => e.id);
    await lister.close();
  } catch (err) {
    throw new TargetUnusableError(target, `list_envs failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const unknown = (opts.envIds ?? []).filter((id) => !listed.includes(id));
  if (unknown.length) throw new UnknownEnvsError(unknown, listed);
  const envIds = opts.envIds ?? listed;
  const cases = CASES.filter((c) => !opts.filter || c.name.includes(opts.filter));
  const serverCases = cases.filter((c) => c.perServer && !c.endsServer);
  const envCases = cases.filter((c) => !c.perServer);
  const jobs: [string, ConformanceCase][] = [
    ...serverCases.map((c) => ['(server)', c] as [string, ConformanceCase]),
    ...envIds.flatMap((id) => envCases.map((c) => [id, c] as [string, ConformanceCase])),
    ...cases.filter((c) => c.endsServer).map((c) => ['(server)', c] as [string, ConformanceCase]),
  ];
  for (const [envId, kase] of jobs) {
    const clients: GymwireClient[] = [];
    const raws: RawConnection[] = [];
    const ctx: CaseContext = {
      target,
      envId: envId === '(server)' ? (envIds[0] ?? 'gymwire/CartPole-v1') : envId,
      maxSteps: opts.maxSteps ?? 600,
      helloWaitMs: opts.helloWaitMs ?? 8000,
      client: async ({ connector = target.connector, ...o } = {}) => {
        const c = await connect(connector, {
          token: target.token,
          reconnectDelayMs: 10,
          requestTimeoutMs: REQUEST_DEADLINE_MS,
          clientName: CONFORMANCE_CLIENT_NAME,
          ...o,
        });
        clients.push(c);
        return c;
      },
      raw: async () => {
        const r = new RawConnection(await target.connector());
        raws.push(r);
        return r;
      },
    };
    const start = performance.now();
    let report: CaseReport;
    let deadline: NodeJS.Timeout | undefined;
    try {
      const overdue = new Promise<never>((_, reject) => {
        deadline = setTimeout(
          () => reject(new ConformanceFailure(`the case did not finish within ${opts.caseDeadlineMs ?? CASE_DEADLINE_MS} ms`)),
          opts.caseDeadlineMs ?? CASE_DEADLINE_MS,
        );
      });
      const result = (await Promise.race([kase.run(ctx), overdue])) ?? { status: 'pass' };
      report = {
        env: envId,
        name: kase.name,
        status: result.status,
        ms: performance.now() - start,
        ...(result.status === 'skip' ? { message: result.reason } : {}),
      };
    } catch (err) {
      report = {
        env: envId,
        name: kase.name,
        status: 'fail',
        ms: performance.now() - start,
        message: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      };
    } finally {
      clearTimeout(deadline);
      await Promise.allSettled(clients.map((c) => c.closeAll()));
      for (const r of raws) r.close();
    }
    reports.push(report);
    opts.onReport?.(report);
    if (opts.failFast && report.status === 'fail') break;
  }
  return reports;
}

/** How long the suite waits for a welcome before it calls the server unusable. */
const WELCOME_WAIT_MS = 10_000;

/**
 * A hello whose answer is no welcome, or a welcome that fails its schema, makes every case
 * meaningless: the run stops at once with the reason, instead of failing each case slowly.
 */
async function checkWelcome(target: ConformanceTarget): Promise<void> {
  let raw: RawConnection | null = null;
  try {
    raw = new RawConnection(await target.connector());
    raw.send({
      id: 1,
      type: 'hello',
      protocol_version: PROTOCOL_VERSION,
      client_name: CONFORMANCE_CLIENT_NAME,
      ...(target.token ? { token: target.token } : {}),
    });
    const answer = await raw.next(WELCOME_WAIT_MS);
    if (answer.type !== 'result') throw new ConformanceFailure(`hello was refused: ${previewValue(answer.error, 300)}`);
    const parsed = WelcomeResultSchema.safeParse(answer.result);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(result)'}: ${i.message}`);
      throw new ConformanceFailure(`the welcome fails its schema (docs/schemas/result.hello.json): ${issues.join('; ')}`);
    }
  } catch (err) {
    throw new TargetUnusableError(target, err instanceof Error ? err.message : String(err));
  } finally {
    raw?.close();
  }
}

/** The server cannot be checked at all (no connection, a refused hello, a welcome that fails its schema). */
export class TargetUnusableError extends Error {
  override readonly name = 'TargetUnusableError';
  constructor(target: ConformanceTarget, reason: string) {
    super(`${target.name} cannot be checked: ${reason}`);
  }
}

/** `--env` named ids the server does not list: refused once, before any case runs. */
export class UnknownEnvsError extends Error {
  override readonly name = 'UnknownEnvsError';
  constructor(
    readonly unknown: string[],
    readonly available: string[],
  ) {
    super(`the server lists no env ${unknown.join(', ')}; it serves: ${available.join(', ')}`);
  }
}
