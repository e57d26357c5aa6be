/**
 * Cases on the wire form: frames the decoder must refuse, the hello deadline and the pre-hello
 * size limit, Discrete actions in their two spellings, and the exact form of batched answers
 * (dtypes of rewards and flags, final_obs and final_info, the refused action's index, one seed per
 * session). Each names the statements of docs/PROTOCOL.md and docs/errors.md it checks.
 */
import { encode } from '../../protocol/codec.ts';
import { contains } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { sample } from '../../runtime/space-sample.ts';
import { batchRow, check, errorCode, invalidActions, RawSession, valuesEqual } from '../harness.ts';
import type { CaseContext, CaseResult, ConformanceCase } from '../harness.ts';

/** `{id, type: "ping", payload: <msgpack ext type 42, one byte>}`: an extension type the protocol does not define. */
function pingWithUnknownExtension(id: number): Uint8Array {
  const head = encode({ id, type: 'ping', payload: 0 });
  // The payload 0 is the frame's last byte (a positive fixint); it becomes fixext1 (0xd4) type 42, data 7.
  return Uint8Array.from([...head.subarray(0, head.length - 1), 0xd4, 42, 7]);
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

function sameObservation(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && b instanceof Tensor && b.shape.length === 0) return a === b.at(0);
  if (typeof b === 'number' && a instanceof Tensor && a.shape.length === 0) return b === a.at(0);
  return valuesEqual(a, b);
}

interface Made {
  session_id: string;
  action_space: Space;
  observation_space: Space;
  render_mode: string | null;
}

async function twoSessions(s: RawSession, ctx: CaseContext): Promise<Made[]> {
  return [await s.result<Made>('make', { env_id: ctx.envId }), await s.result<Made>('make', { env_id: ctx.envId })];
}

export const WIRE_CASES: ConformanceCase[] = [
  {
    name: 'frames: unknown extension types and nesting past 512 levels are ENV_ERR_BAD_FRAME with the id',
    covers: ['P-FRAME-6', 'P-FRAME-8', 'E-BAD_FRAME-2'],
    perServer: true,
    async run(ctx) {
      const s = await RawSession.open(ctx);
      s.raw.sendBytes(pingWithUnknownExtension(101));
      const ext = await s.raw.next();
      check(
        errorCode(ext) === 'ENV_ERR_BAD_FRAME',
        `a frame with msgpack extension type 42: expected ENV_ERR_BAD_FRAME, got ${JSON.stringify(ext).slice(0, 200)}`,
      );
      check(ext.id === 101, `the refusal of an unknown extension type carries id ${JSON.stringify(ext.id)}, not the frame's 101`);
      s.raw.send({ id: 102, type: 'ping', payload: nested(600) });
      const deep = await s.raw.next();
      check(errorCode(deep) === 'ENV_ERR_BAD_FRAME', `a frame nesting 600 levels: expected ENV_ERR_BAD_FRAME, got ${JSON.stringify(deep).slice(0, 200)}`);
      check(deep.id === 102, `the refusal of a frame nested too deep carries id ${JSON.stringify(deep.id)}, not the frame's 102`);
      s.raw.send({ id: 103, type: 'ping', payload: nested(100) });
      const fine = await s.raw.next();
      check(fine.type === 'result', `a frame nesting 100 levels (within the bound) was refused: ${JSON.stringify(fine).slice(0, 200)}`);
    },
  },
  {
    name: 'handshake: a frame over 64 KiB before hello is ENV_ERR_FRAME_TOO_LARGE, then close 1008',
    covers: ['P-FRAME-5', 'E-FRAME_TOO_LARGE-2'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      raw.send({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'x'.repeat(70 * 1024) });
      const answer = await raw.next();
      check(errorCode(answer) === 'ENV_ERR_FRAME_TOO_LARGE', `a 70 KiB hello: expected ENV_ERR_FRAME_TOO_LARGE, got ${JSON.stringify(answer).slice(0, 200)}`);
      const code = await raw.closedWith();
      check(code === 1008, `after a pre-hello frame over 64 KiB the server closes with 1008, got ${code === null ? 'no close within 3 s' : code}`);
      const after = await raw.next(0).catch(() => null);
      check(
        after === null,
        `the server closed the connection for another reason (its hello deadline?), not for the oversize frame: it sent ${JSON.stringify(after).slice(0, 200)}`,
      );
    },
  },
  {
    name: 'handshake: a connection that says no hello is sent ENV_ERR_HANDSHAKE_REQUIRED and closed with 1008',
    covers: ['P-HELLO-2', 'E-HANDSHAKE_REQUIRED-2'],
    perServer: true,
    async run(ctx) {
      const raw = await ctx.raw();
      const code = await raw.closedWith(ctx.helloWaitMs);
      check(
        code !== null,
        `a connection that sent nothing was still open after ${ctx.helloWaitMs} ms: the server has no hello deadline (pass --hello-wait when its --hello-timeout is longer)`,
      );
      check(code === 1008, `a connection without hello was closed with ${code}, not 1008`);
      const told = await raw.next(0).catch(() => null);
      check(
        told !== null && errorCode(told) === 'ENV_ERR_HANDSHAKE_REQUIRED' && told.id === null,
        `before closing, the server sends ENV_ERR_HANDSHAKE_REQUIRED with id null; got ${told ? JSON.stringify(told).slice(0, 200) : 'nothing'}`,
      );
    },
  },
  {
    name: 'actions: a Discrete action is an integer or a 0-d integer tensor; floats are refused in step and step_batch',
    covers: ['P-STEP-5', 'P-STEP-6', 'E-INVALID_ACTION-3'],
    async run(ctx): Promise<CaseResult> {
      const s = await RawSession.open(ctx);
      const [a, b] = await twoSessions(s, ctx);
      if (a!.action_space.type !== 'discrete') return { status: 'skip', reason: `the action space is ${a!.action_space.type}, not discrete` };
      for (const m of [a!, b!]) await s.result('reset', { session_id: m.session_id, seed: 5 });
      const action = a!.action_space.start;
      const asTensor = await s.call('step', { session_id: a!.session_id, action: Tensor.from('int64', [], [action]) });
      check(asTensor.type === 'result', `a Discrete action as an int64 tensor of shape []: refused with ${JSON.stringify(asTensor.error)}`);
      const asInt = await s.result<{ obs: unknown; reward: number }>('step', { session_id: b!.session_id, action });
      const t = asTensor.result as { obs: unknown; reward: number };
      check(valuesEqual(t.obs, asInt.obs) && t.reward === asInt.reward, 'a 0-d tensor action moved the env differently from the same integer');
      await s.refused('ENV_ERR_INVALID_ACTION', 'a Discrete action as the float 0.5', 'step', { session_id: a!.session_id, action: action + 0.5 });
      const ids = [a!.session_id, b!.session_id];
      for (const [what, actions] of [
        ['a float in a step_batch array', [action + 0.5, action]],
        ['a float32 tensor of Discrete actions', Tensor.from('float32', [2], [action, action])],
      ] as const) {
        const e = await s.refused('ENV_ERR_INVALID_ACTION', `step_batch with ${what}`, 'step_batch', { session_ids: ids, actions, autoreset_mode: 'disabled' });
        check(e.details.index === 0, `step_batch with ${what}: details.index is ${JSON.stringify(e.details.index)}, not 0`);
      }
      return { status: 'pass' };
    },
  },
  {
    name: 'batches: rewards float64 [N], flags bool [N], one info and one error slot per session',
    covers: ['P-BATCH-3'],
    async run(ctx) {
      const s = await RawSession.open(ctx);
      const made = await twoSessions(s, ctx);
      const ids = made.map((m) => m.session_id);
      await s.result('reset_batch', { session_ids: ids, seeds: [1, 2] });
      const rng = new Random(9);
      const out = await s.result<Record<string, unknown>>('step_batch', {
        session_ids: ids,
        actions: made.map((m) => sample(m.action_space, rng)),
        autoreset_mode: 'next_step',
      });
      const tensor = (name: string, dtype: string) => {
        const t = out[name];
        check(
          t instanceof Tensor && t.dtype === dtype && t.shape.length === 1 && t.shape[0] === 2,
          `step_batch ${name} must be a ${dtype} tensor of shape [2], got ${t instanceof Tensor ? `${t.dtype} [${t.shape.join(', ')}]` : typeof t}`,
        );
      };
      tensor('rewards', 'float64');
      tensor('terminated', 'bool');
      tensor('truncated', 'bool');
      check(Array.isArray(out.infos) && out.infos.length === 2, 'step_batch infos must be an array with one map per session');
      check(
        Array.isArray(out.errors) && out.errors.length === 2 && out.errors.every((e) => e === null),
        'step_batch errors must be one null per session that stepped',
      );
    },
  },
  {
    name: 'batches: same_step puts final_obs and final_info in the info of each ended session only',
    covers: ['P-BATCH-5'],
    async run(ctx): Promise<CaseResult> {
      const s = await RawSession.open(ctx);
      const made = await twoSessions(s, ctx);
      const ids = made.map((m) => m.session_id);
      await s.result('reset_batch', { session_ids: ids, seeds: [3, 4] });
      const rng = new Random(12);
      for (let i = 0; i < ctx.maxSteps; i++) {
        const out = await s.result<{ obs: unknown; terminated: Tensor; truncated: Tensor; infos: Record<string, unknown>[] }>('step_batch', {
          session_ids: ids,
          actions: made.map((m) => sample(m.action_space, rng)),
          autoreset_mode: 'same_step',
        });
        const ended = [0, 1].map((k) => out.terminated.at(k) === 1 || out.truncated.at(k) === 1);
        if (!ended.some(Boolean)) continue;
        ended.forEach((e, k) => {
          const info = out.infos[k]!;
          if (e) {
            check(
              'final_obs' in info && 'final_info' in info,
              `session ${k} ended: its info must hold final_obs and final_info, it has ${Object.keys(info).join(', ') || 'nothing'}`,
            );
            check(contains(made[k]!.observation_space, info.final_obs) === null, `session ${k}: final_obs lies outside the observation space`);
            check(info.final_info !== null && typeof info.final_info === 'object', `session ${k}: final_info must be a map`);
            check(
              contains(made[k]!.observation_space, batchRow(out.obs, k, made[k]!.observation_space)) === null,
              `session ${k}: the reset observation lies outside the observation space`,
            );
          } else check(!('final_obs' in info), `session ${k} did not end, yet its info holds final_obs`);
        });
        return { status: 'pass' };
      }
      return { status: 'skip', reason: `no episode ended within ${ctx.maxSteps} batched steps` };
    },
  },
  {
    name: 'batches: a refused action names its index in details.index',
    covers: ['E-INVALID_ACTION-2', 'P-BATCH-2'],
    async run(ctx) {
      const s = await RawSession.open(ctx);
      const made = await twoSessions(s, ctx);
      const ids = made.map((m) => m.session_id);
      await s.result('reset_batch', { session_ids: ids, seeds: [5, 6] });
      const good = sample(made[0]!.action_space, new Random(5));
      const bad = invalidActions(made[1]!.action_space)[0]!.action;
      const e = await s.refused('ENV_ERR_INVALID_ACTION', 'a batch whose second action is invalid', 'step_batch', {
        session_ids: ids,
        actions: [good, bad],
        autoreset_mode: 'next_step',
      });
      check(e.details.index === 1, `the refusal's details.index is ${JSON.stringify(e.details.index)}, not 1 (the invalid action's position)`);
      check(e.details.session_id === ids[1], `the refusal's details.session_id is ${JSON.stringify(e.details.session_id)}, not the second session's`);
    },
  },
  {
    name: 'batches: reset_batch seeds each session with its own seed',
    covers: ['P-BATCH-7', 'P-RESET-1'],
    async run(ctx): Promise<CaseResult> {
      const s = await RawSession.open(ctx);
      const made = [...(await twoSessions(s, ctx)), ...(await twoSessions(s, ctx))];
      const singles = [
        (await s.result<{ obs: unknown }>('reset', { session_id: made[2]!.session_id, seed: 91 })).obs,
        (await s.result<{ obs: unknown }>('reset', { session_id: made[3]!.session_id, seed: 92 })).obs,
      ];
      if (valuesEqual(singles[0], singles[1])) return { status: 'skip', reason: 'the env resets to the same observation for seeds 91 and 92' };
      const batch = await s.result<{ obs: unknown }>('reset_batch', { session_ids: [made[0]!.session_id, made[1]!.session_id], seeds: [91, 92] });
      [0, 1].forEach((k) =>
        check(
          sameObservation(batchRow(batch.obs, k, made[k]!.observation_space), singles[k]),
          `reset_batch session ${k} (seed ${91 + k}) differs from a single reset with seed ${91 + k}`,
        ),
      );
      return { status: 'pass' };
    },
  },
];
