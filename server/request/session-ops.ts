/**
 * The requests on one session: reset, step, render, execute (tools), get_state, set_state and
 * close, each run under the session's lock.
 */
import sharp from 'sharp';

import type { Env, EnvTool } from '../../envs/core/env.ts';
import { unwrap } from '../../envs/core/wrappers.ts';
import { previewValue, ProtocolError } from '../../protocol/errors.ts';
import type { RequestOf, ResultOf } from '../../protocol/messages.ts';
import { contains } from '../../protocol/spaces.ts';
import type { Space } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { ClientState } from '../client-state.ts';
import type { ServerCore } from '../core.ts';
import { floatActions } from './parse-request.ts';
import { withSession } from './session-scope.ts';

export function reset(core: ServerCore, client: ClientState, req: RequestOf<'reset'>) {
  return withSession(core, client, req.session_id, async (s) => {
    const r = await s.env.reset({ seed: req.seed ?? null, options: req.options ?? null });
    s.autoresetPending = false;
    s.recordReset(r.obs, r.info);
    s.metrics.resets.n++;
    return { obs: r.obs, info: r.info };
  });
}

export function step(core: ServerCore, client: ClientState, req: RequestOf<'step'>) {
  return withSession(core, client, req.session_id, (s) => {
    req = { ...req, action: discreteScalar(s.env.actionSpace, req.action) };
    const reason = contains(s.env.actionSpace, req.action) ?? floatForDiscrete(s.env.actionSpace, req.action, floatActions(req) === true);
    if (reason) throw new ProtocolError('ENV_ERR_INVALID_ACTION', `action is not in the action space: ${reason}`, { session_id: s.id });
    const start = process.hrtime.bigint();
    const done = (r: Awaited<ReturnType<Env['step']>>) => {
      s.metrics.steps.n++;
      s.metrics.latency.observe(Number(process.hrtime.bigint() - start) / 1e9);
      s.recordStep(r.obs, r.reward, r.terminated, r.truncated, r.info, req.action, core.viewers > 0);
      return { obs: r.obs, reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
    };
    const r = s.env.step(req.action);
    return r instanceof Promise ? r.then(done) : done(r);
  });
}

export function render(core: ServerCore, client: ClientState, req: RequestOf<'render'>) {
  return withSession(core, client, req.session_id, async (s) => {
    if (!s.env.render) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not render`);
    const frame = await s.env.render();
    if (frame == null) {
      throw new ProtocolError(
        'ENV_ERR_UNSUPPORTED',
        `${s.envId} rendered nothing; make it with kwargs {render_mode: 'rgb_array'} (render modes: ${s.env.metadata.render_modes.join(', ') || 'none'})`,
      );
    }
    if (typeof frame === 'string') return { format: 'tensor' as const, frame };
    if (req.format === 'tensor') return { format: 'tensor' as const, frame };
    const [height, width, channels] = frame.shape;
    if (frame.dtype !== 'uint8' || frame.shape.length !== 3 || (channels !== 3 && channels !== 4)) {
      throw new ProtocolError(
        'ENV_ERR_UNSUPPORTED',
        `cannot encode a ${frame.dtype} [${frame.shape.join(', ')}] frame as ${req.format}; need uint8 [H, W, 3|4]`,
      );
    }
    const img = sharp(Buffer.from(frame.bytes()), { raw: { width: width!, height: height!, channels: channels as 3 | 4 } });
    const bytes = req.format === 'png' ? await img.png({ compressionLevel: 3 }).toBuffer() : await img.jpeg({ quality: req.quality ?? 90 }).toBuffer();
    return { format: req.format, frame: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
  });
}

export function execute(core: ServerCore, client: ClientState, req: RequestOf<'execute'>) {
  return withSession(core, client, req.session_id, async (s) => {
    const tool = (s.env.tools ?? []).find((t) => t.name === req.tool) as EnvTool<unknown> | undefined;
    if (!tool) {
      throw new ProtocolError(
        'ENV_ERR_UNKNOWN_TOOL',
        `${s.envId} has no tool ${previewValue(req.tool)}; its tools: ${(s.env.tools ?? []).map((t) => t.name).join(', ') || 'none'}`,
        { tools: (s.env.tools ?? []).map((t) => t.name) },
      );
    }
    const parsed = tool.inputSchema.safeParse(req.args);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
      throw new ProtocolError(
        'ENV_ERR_INVALID_TOOL_ARGS',
        `invalid arguments for ${tool.name}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`,
        { issues },
      );
    }
    const result = await tool.handler(parsed.data, { env: unwrap(s.env), wrapped: s.env });
    return { result: result ?? null };
  });
}

export function getState(core: ServerCore, client: ClientState, req: RequestOf<'get_state'>) {
  return withSession(core, client, req.session_id, async (s) => {
    const get = s.env.getState;
    if (!get) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not support get_state`);
    return { state: await get() };
  });
}

export function setState(core: ServerCore, client: ClientState, req: RequestOf<'set_state'>) {
  return withSession(core, client, req.session_id, async (s) => {
    const set = s.env.setState;
    if (!set) throw new ProtocolError('ENV_ERR_UNSUPPORTED', `${s.envId} does not support set_state`);
    await set(req.state);
    s.autoresetPending = false;
    return {};
  });
}

export async function closeRequest(core: ServerCore, client: ClientState, req: RequestOf<'close'>): Promise<ResultOf<'close'>> {
  const s = core.sessions.get(req.session_id);
  // Closing twice (or closing a reaped session) is not an error: close is idempotent.
  if (!s || s.closed || s.ownerId !== client.id) return { closed: false };
  // Requests queued before close run first; a call that does not end within closeWaitMs (a hung
  // env) does not hold close: the session closes now and its env once that call ends.
  const locked = s.lock.acquire().then(() => s.lock.release());
  let waited: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([locked.then(() => true), new Promise<false>((r) => (waited = setTimeout(r, core.closeWaitMs, false)))]);
  clearTimeout(waited);
  if (inTime) await core.closeSession(s, 'closed by the client', false);
  else void core.closeSession(s, 'closed by the client while a call was in progress', false, locked);
  return { closed: true };
}

/** Gymnasium's Discrete holds integers only: an integral value sent as a msgpack float is refused too. */
/** A Discrete action may come as an integer tensor of shape []: the env gets the integer. */
export function discreteScalar(space: Space, action: unknown): unknown {
  if (space.type !== 'discrete' || !(action instanceof Tensor) || action.shape.length !== 0 || !INTEGER_DTYPES.has(action.dtype)) return action;
  return action.at(0);
}

const INTEGER_DTYPES = new Set<string>(['int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64']);

export function floatForDiscrete(space: Space, action: unknown, sentAsFloat: boolean): string | null {
  if (!sentAsFloat || space.type !== 'discrete') return null;
  return `expected an integer, got the float ${String(action)} (a Discrete action is a msgpack integer, as Gymnasium's Discrete.contains requires)`;
}
