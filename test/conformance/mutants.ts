/**
 * Mutant servers for testing the conformance suite itself: the real server behind a frame-rewriting
 * proxy, one protocol bug per mutant. The proxy runs inside the client's connector, so every case
 * of the suite (clients and raw connections alike) talks to the mutant; `none` is the faithful proxy
 * (it must pass everything, which keeps the proxy itself honest).
 *
 * The proxy scales request ids by ID_SCALE on the way in (and back on the way out), which leaves
 * room between a client's ids for requests a mutant injects, so the server's id rules (ids increase,
 * acks) see the same order the client used. A logical client is followed across resumes by its
 * resume token.
 */
import { batchLength, batchRow } from '../../protocol/batch.ts';
import { decode, encode } from '../../protocol/codec.ts';
import { REQUEST_SCHEMAS } from '../../protocol/messages.ts';
import type { RequestType } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { contains, isPlainObject, SpaceSchema } from '../../protocol/spaces.ts';
import { sample } from '../../runtime/space-sample.ts';
import type { Space } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { ClientTransport, Connector } from '../../client/ts/transport.ts';

export const MUTANTS = {
  none: 'the faithful proxy (the control: passes every case)',
  'refused-action-applies': 'a step refused as an invalid action still moves the env (with a random valid action)',
  'unknown-fields-accepted': 'requests with unknown fields are accepted (the fields are dropped)',
  'text-frames-ignored': 'text frames get no answer',
  'null-seed-reseeds': 'reset with a null seed reseeds with 0',
  'batch-partially-applied': 'a batch refused for one invalid action still steps its valid sessions',
  'batch-obs-as-list': 'batched observations come as a list of tensors, not one stacked tensor',
  'dict-batch-as-list': "a Dict's batched observations come as a list of per-session maps, not one map of per-key batches",
  'wrong-time-limit': 'make reports a time limit 5 steps longer than the one applied',
  'rewards-zero': 'every reward is 0',
  'stale-observations': 'step answers carry the previous observation',
  'ping-payload-dropped': 'ping answers drop the payload',
  'tool-args-unchecked': 'tool calls with bad arguments succeed with a null result',
  'retry-applied-twice': 'a request resent after a reconnect runs again',
  'error-id-null': 'error answers carry id null',
  'version-mismatch-accepted': 'a hello with an unknown protocol version is accepted',
  'close-not-idempotent': 'closing a closed session is an error',
  'obs-dtype-widened': 'float32 observations are sent as float64',
  'infinite-bounds-finite': 'infinite Box bounds are described as finite (±3.4e38)',
  // frames and handshake
  'unknown-extension-accepted': 'a frame with an unknown msgpack extension type is answered as if the value were null',
  'deep-nesting-accepted': 'values nested deeper than 512 levels are accepted (the deep part dropped)',
  'prehello-oversize-kept-open': 'a frame over 64 KiB before hello is refused but the connection stays open',
  'no-hello-deadline': 'a connection that never says hello is never closed',
  'welcome-malformed': 'the welcome lacks its resume token',
  // actions
  'discrete-0d-tensor-refused': 'a Discrete action sent as an integer tensor of shape [] is refused',
  'discrete-float-accepted': 'float Discrete actions are floored and accepted, in step and step_batch',
  // batches
  'batch-rewards-float32': 'step_batch rewards are float32',
  'batch-flags-uint8': 'step_batch terminated and truncated are uint8',
  'final-info-missing': 'same_step autoreset puts final_obs but no final_info in the info',
  'batch-refusal-no-index': 'a refused step_batch does not name the refused index',
  'reset-batch-one-seed': 'reset_batch seeds every session with the first seed',
  // render
  'render-channels-first': 'frames are laid out [C, H, W]',
  'render-without-mode-answers': 'a session made without a render mode renders a blank frame',
  // sessions
  'foreign-close': 'another client can close your session',
  'big-seed-accepted': 'seeds past 2^53 - 1 (and negative ones) are accepted, wrapped into range',
  'bad-options-wrong-code': 'invalid reset options are answered with ENV_ERR_ENV_FAILURE',
  'set-state-keeps-rng': 'set_state does not restore the random generator',
  'tool-schema-invalid': "tool parameter schemas name types JSON Schema does not have ('float', 'int')",
  'list-envs-limit-null': 'list_envs says max_episode_steps null',
  'list-envs-tools-differ': 'list_envs leaves out the last tool of each env',
  // the time limit
  'time-limit-late': 'episodes are truncated one step after max_episode_steps',
  'time-limit-early': 'episodes are truncated at 40% of the max_episode_steps make reports',
  // stale observations everywhere (single and batched alike)
  'stale-everywhere': 'step and step_batch answers carry the previous observation',
  // lifecycle (killed only when the suite controls the server: LIFECYCLE_MUTANTS)
  'shutdown-event-dropped': 'a stopping server closes its connections without the shutdown event',
  'shutdown-close-1000': 'a stopping server closes its connections with 1000, not 1001',
  'idle-event-dropped': 'sessions closed by the idle reaper send no session_closed event',
  'max-sessions-misreported': 'the welcome announces one session fewer than the server holds',
} as const;
/** The mutants only a suite that starts and stops the server can kill (the lifecycle cases). */
export const LIFECYCLE_MUTANTS = ['shutdown-event-dropped', 'shutdown-close-1000', 'idle-event-dropped', 'max-sessions-misreported'] as const;
export type MutantName = keyof typeof MUTANTS;

/** Proxy ids per client id: the ones in between are for injected requests. */
const ID_SCALE = 1000;

interface LogicalClient {
  /** The highest id the client sent; injected requests take the ids just above its scaled value. */
  highestId: number;
  injected: number;
  /** Proxy id -> client id (and the request, for mutants that act on answers). */
  requests: Map<number, { clientId: number; message: Record<string, unknown> }>;
  actionSpaces: Map<string, Space>;
  lastObs: Map<string, unknown>;
  /** Steps since the last reset, and the time limit make reported, per session. */
  steps: Map<string, number>;
  limits: Map<string, number | null>;
  /** Sessions whose next step the late time limit answers as truncated. */
  lateTruncation: Set<string>;
  /** Sessions set to a state since their last null-seed reset (set-state-keeps-rng). */
  restored: Set<string>;
  /** The last batched observations per list of session ids (stale-everywhere). */
  lastBatchObs: Map<string, unknown>;
}

/** Who made each session, across the connector's connections (foreign-close reaches the owner). */
interface Owner {
  client: LogicalClient;
  inject(message: Message): void;
}

type Message = Record<string, unknown>;

/** A connector whose connections talk to `mutant` (the real server behind `inner`). */
export function mutantConnector(inner: Connector, mutant: MutantName): Connector {
  const byResumeToken = new Map<string, LogicalClient>();
  const owners = new Map<string, Owner>();
  const rng = new Random(99);
  /** An id above every id the client used so far, below its next one. */
  const freshId = (c: LogicalClient): number => c.highestId * ID_SCALE + 1 + (c.injected++ % (ID_SCALE - 1));

  return async () => {
    const t = await inner();
    let client: LogicalClient | null = null;
    let resumed = false;
    const swallowed = new Set<number>();
    const wrapped: ClientTransport = {
      send: (frame) => {
        let m: Message;
        try {
          m = decode(frame) as Message;
        } catch {
          return t.send(frame);
        }
        if (mutant === 'prehello-oversize-kept-open' && !client && frame.length > 64 * 1024 && m.type === 'hello') {
          const refusal = { id: m.id ?? null, type: 'error', error: { code: 'ENV_ERR_FRAME_TOO_LARGE', message: 'too large before hello', details: {} } };
          return void queueMicrotask(() => wrapped.onmessage?.(encode(refusal)));
        }
        if (!m || typeof m !== 'object' || Array.isArray(m) || typeof m.id !== 'number') return t.send(frame);
        if (m.type === 'hello') {
          const token = typeof m.resume_token === 'string' ? m.resume_token : null;
          resumed = token !== null && byResumeToken.has(token);
          client = (token && byResumeToken.get(token)) || newClient();
          if (mutant === 'version-mismatch-accepted') m.protocol_version = 1;
        }
        const c = client;
        if (!c) return t.send(frame);
        const clientId = m.id;
        const retried = clientId <= c.highestId && c.highestId > 0;
        c.highestId = Math.max(c.highestId, clientId);
        const proxyId = mutant === 'retry-applied-twice' && resumed && retried && m.type !== 'hello' ? freshId(c) : clientId * ID_SCALE;
        c.requests.set(proxyId, { clientId, message: m });
        const out: Message = { ...m, id: proxyId };
        if (typeof m.ack === 'number') out.ack = m.ack * ID_SCALE + ID_SCALE - 1;
        if (mutant === 'unknown-fields-accepted' && Object.hasOwn(REQUEST_SCHEMAS, String(m.type))) {
          const known = Object.keys((REQUEST_SCHEMAS[m.type as RequestType] as unknown as { shape: object }).shape);
          for (const key of Object.keys(out)) if (!known.includes(key)) delete out[key];
        }
        if (mutant === 'null-seed-reseeds' && m.type === 'reset' && (m.seed === null || m.seed === undefined)) out.seed = 0;
        const local = sendSide(mutant, c, m, out, inject);
        if (local) return void queueMicrotask(() => wrapped.onmessage?.(encode({ id: clientId, ...local })));
        t.send(encode(out));
      },
      sendText: (text) => {
        if (mutant !== 'text-frames-ignored') t.sendText?.(text);
      },
      close: () => t.close(),
    };
    const inject = (c: LogicalClient, message: Message): void => {
      const id = freshId(c);
      swallowed.add(id);
      t.send(encode({ ...message, id }));
    };
    t.onclose = (code, reason) => {
      // A server without a hello deadline: the connection that never said hello stays open.
      if (mutant === 'no-hello-deadline' && !client) return;
      wrapped.onclose?.(mutant === 'shutdown-close-1000' && code === 1001 ? 1000 : code, reason);
    };
    t.onmessage = (frame) => {
      const m = decode(frame) as Message;
      if (typeof m.id === 'number' && swallowed.delete(m.id)) return;
      const c = client;
      const entry = c && typeof m.id === 'number' ? c.requests.get(m.id) : undefined;
      if (!c || !entry) {
        if (m.type === 'event' && mutant === 'shutdown-event-dropped' && m.event === 'shutdown') return;
        if (m.type === 'event' && mutant === 'idle-event-dropped' && m.event === 'session_closed') return;
        const code = (m.error as { code?: string } | undefined)?.code;
        if (mutant === 'no-hello-deadline' && !c && code === 'ENV_ERR_HANDSHAKE_REQUIRED' && m.id === null) return;
        if (mutant === 'unknown-extension-accepted' && code === 'ENV_ERR_BAD_FRAME' && /extension/i.test(String((m.error as { message?: unknown }).message)))
          return wrapped.onmessage?.(encode({ id: m.id, type: 'result', result: { payload: null, server_time_ms: Date.now() } }));
        return wrapped.onmessage?.(frame);
      }
      const req = entry.message;
      const answer: Message = { ...m, id: entry.clientId };
      const result = answer.result as Message | undefined;
      const errorCode = (answer.error as { code?: string } | undefined)?.code;
      if (req.type === 'hello' && result && typeof result.resume_token === 'string') byResumeToken.set(result.resume_token, c);
      if (req.type === 'make' && result) {
        c.actionSpaces.set(result.session_id as string, SpaceSchema.parse(result.action_space));
        c.limits.set(result.session_id as string, result.max_episode_steps as number | null);
        owners.set(result.session_id as string, { client: c, inject: (message) => inject(c, message) });
        if (mutant === 'wrong-time-limit' && typeof result.max_episode_steps === 'number') result.max_episode_steps += 5;
        if (mutant === 'infinite-bounds-finite') finiteBounds(result.observation_space);
      }
      if (mutant === 'refused-action-applies' && req.type === 'step' && errorCode === 'ENV_ERR_INVALID_ACTION') {
        const space = c.actionSpaces.get(req.session_id as string);
        if (space) inject(c, { type: 'step', session_id: req.session_id, action: sample(space, rng) });
      }
      if (mutant === 'batch-partially-applied' && req.type === 'step_batch' && errorCode === 'ENV_ERR_INVALID_ACTION' && Array.isArray(req.actions)) {
        (req.session_ids as string[]).forEach((sid, i) => {
          const space = c.actionSpaces.get(sid);
          const action = (req.actions as unknown[])[i];
          if (space && contains(space, action) === null) inject(c, { type: 'step', session_id: sid, action });
        });
      }
      if (result && (req.type === 'step' || req.type === 'reset')) {
        const sid = req.session_id as string;
        const current = result.obs;
        if (mutant === 'stale-observations' && req.type === 'step' && c.lastObs.has(sid)) result.obs = c.lastObs.get(sid);
        c.lastObs.set(sid, current);
        if (mutant === 'obs-dtype-widened' && result.obs instanceof Tensor && result.obs.dtype === 'float32')
          result.obs = Tensor.from('float64', result.obs.shape, result.obs.toNumbers());
      }
      if (mutant === 'rewards-zero' && result) {
        if (req.type === 'step') result.reward = 0;
        if (req.type === 'step_batch') result.rewards = Tensor.zeros('float64', (result.rewards as Tensor).shape);
      }
      if (mutant === 'batch-obs-as-list' && result && (req.type === 'step_batch' || req.type === 'reset_batch') && result.obs instanceof Tensor)
        result.obs = rows(result.obs);
      if (mutant === 'dict-batch-as-list' && result && (req.type === 'step_batch' || req.type === 'reset_batch') && isPlainObject(result.obs)) {
        const obs = result.obs;
        result.obs = Array.from({ length: batchLength(obs) ?? 0 }, (_, i) => batchRow(obs, i));
      }
      if (mutant === 'ping-payload-dropped' && req.type === 'ping' && result) delete result.payload;
      if (mutant === 'tool-args-unchecked' && errorCode === 'ENV_ERR_INVALID_TOOL_ARGS')
        return wrapped.onmessage?.(encode({ id: entry.clientId, type: 'result', result: { result: null } }));
      if (mutant === 'close-not-idempotent' && req.type === 'close' && result && result.closed === false) {
        return wrapped.onmessage?.(
          encode({ id: entry.clientId, type: 'error', error: { code: 'ENV_ERR_UNKNOWN_SESSION', message: 'no such session', details: {} } }),
        );
      }
      if (mutant === 'foreign-close' && req.type === 'close' && result?.closed === false) {
        const owner = owners.get(req.session_id as string);
        if (owner && owner.client !== c) {
          owner.inject({ type: 'close', session_id: req.session_id });
          result.closed = true;
        }
      }
      answerSide(mutant, c, req, answer);
      if (mutant === 'error-id-null' && answer.type === 'error') answer.id = null;
      wrapped.onmessage?.(encode(answer));
    };
    return wrapped;
  };
}

function newClient(): LogicalClient {
  return {
    highestId: 0,
    injected: 0,
    requests: new Map(),
    actionSpaces: new Map(),
    lastObs: new Map(),
    steps: new Map(),
    limits: new Map(),
    lateTruncation: new Set(),
    restored: new Set(),
    lastBatchObs: new Map(),
  };
}

/** How deep maps and arrays nest in `v`. */
function depth(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depth));
  if (v && typeof v === 'object' && !(v instanceof Tensor) && !(v instanceof Uint8Array)) return 1 + Math.max(0, ...Object.values(v).map(depth));
  return 0;
}

const floorDiscrete = (a: unknown): unknown =>
  typeof a === 'number' && !Number.isInteger(a)
    ? Math.floor(a)
    : a instanceof Tensor && a.dtype.startsWith('float')
      ? Tensor.from('int64', a.shape, a.toNumbers().map(Math.floor))
      : a;

/**
 * Mutations of a request on its way to the server (`out`, already re-identified). Returns an
 * answer (without its id) when the mutant answers the request itself instead of sending it.
 */
function sendSide(mutant: MutantName, c: LogicalClient, m: Message, out: Message, inject: (c: LogicalClient, message: Message) => void): Message | null {
  const sid = m.session_id as string;
  switch (mutant) {
    case 'deep-nesting-accepted':
      if (depth(m) > 512) out.payload = null;
      return null;
    case 'discrete-0d-tensor-refused':
      if (m.type === 'step' && m.action instanceof Tensor && m.action.shape.length === 0)
        return { type: 'error', error: { code: 'ENV_ERR_INVALID_ACTION', message: 'expected an integer', details: { session_id: sid } } };
      return null;
    case 'discrete-float-accepted':
      if (m.type === 'step' && c.actionSpaces.get(sid)?.type === 'discrete') out.action = floorDiscrete(m.action);
      if (m.type === 'step_batch' && c.actionSpaces.get((m.session_ids as string[])[0]!)?.type === 'discrete')
        out.actions = Array.isArray(m.actions) ? m.actions.map(floorDiscrete) : floorDiscrete(m.actions);
      return null;
    case 'reset-batch-one-seed':
      if (m.type === 'reset_batch' && Array.isArray(m.seeds)) out.seeds = m.seeds.map((_, i, all) => all[0]);
      return null;
    case 'big-seed-accepted':
      if (m.type === 'reset' && (typeof m.seed === 'bigint' || (typeof m.seed === 'number' && (m.seed < 0 || m.seed > Number.MAX_SAFE_INTEGER))))
        out.seed = Number(BigInt.asUintN(64, BigInt(m.seed)) % 2n ** 53n);
      return null;
    case 'set-state-keeps-rng':
      if (m.type === 'set_state') c.restored.add(sid);
      // The generator after set_state is where it was, not where get_state left it: one reset's draws ahead.
      if (m.type === 'reset' && (m.seed === null || m.seed === undefined) && c.restored.delete(sid)) inject(c, { type: 'reset', session_id: sid, seed: null });
      return null;
    case 'time-limit-late':
      if (m.type === 'step' && c.lateTruncation.delete(sid))
        return { type: 'result', result: { obs: c.lastObs.get(sid), reward: 0, terminated: false, truncated: true, info: {} } };
      return null;
    default:
      return null;
  }
}

/** Mutations of an answer on its way back to the client, in place. */
function answerSide(mutant: MutantName, c: LogicalClient, req: Message, answer: Message): void {
  const result = answer.result as Message | undefined;
  const error = answer.error as { code: string; details: Record<string, unknown> } | undefined;
  const sid = req.session_id as string;
  if (result && (req.type === 'reset' || req.type === 'reset_batch'))
    for (const id of req.type === 'reset' ? [sid] : (req.session_ids as string[])) c.steps.set(id, 0);
  if (result && req.type === 'step') {
    const n = (c.steps.get(sid) ?? 0) + 1;
    c.steps.set(sid, n);
    const limit = c.limits.get(sid) ?? null;
    if (mutant === 'time-limit-late' && limit !== null && n === limit && result.truncated === true && result.terminated === false) {
      result.truncated = false;
      c.lateTruncation.add(sid);
    }
    if (mutant === 'time-limit-early' && limit !== null && n === Math.floor(limit * 0.4)) result.truncated = true;
  }
  switch (mutant) {
    case 'welcome-malformed':
      if (req.type === 'hello' && result) delete result.resume_token;
      return;
    case 'max-sessions-misreported':
      if (req.type === 'hello' && result) (result.limits as { max_sessions: number }).max_sessions -= 1;
      return;
    case 'batch-rewards-float32':
      if (req.type === 'step_batch' && result)
        result.rewards = Tensor.from('float32', (result.rewards as Tensor).shape, (result.rewards as Tensor).toNumbers());
      return;
    case 'batch-flags-uint8':
      if (req.type === 'step_batch' && result)
        for (const key of ['terminated', 'truncated']) result[key] = Tensor.from('uint8', (result[key] as Tensor).shape, (result[key] as Tensor).toNumbers());
      return;
    case 'final-info-missing':
      if (req.type === 'step_batch' && result) for (const info of result.infos as Message[]) delete info.final_info;
      return;
    case 'batch-refusal-no-index':
      if (req.type === 'step_batch' && error?.code === 'ENV_ERR_INVALID_ACTION') delete error.details.index;
      return;
    case 'render-channels-first':
      if (req.type === 'render' && result?.frame instanceof Tensor && result.frame.shape.length === 3) result.frame = channelsFirst(result.frame);
      return;
    case 'render-without-mode-answers':
      if (req.type === 'render' && error?.code === 'ENV_ERR_UNSUPPORTED') {
        answer.type = 'result';
        answer.result = { format: 'tensor', frame: Tensor.zeros('uint8', [4, 4, 3]) };
        delete answer.error;
      }
      return;
    case 'bad-options-wrong-code':
      if (error?.code === 'ENV_ERR_INVALID_OPTIONS') error.code = 'ENV_ERR_ENV_FAILURE';
      return;
    case 'tool-schema-invalid':
      if (result && (req.type === 'make' || req.type === 'list_tools'))
        for (const tool of result.tools as Message[]) renameTypes((tool.function as Message).parameters);
      return;
    case 'list-envs-limit-null':
      if (req.type === 'list_envs' && result) for (const e of result.envs as Message[]) e.max_episode_steps = null;
      return;
    case 'list-envs-tools-differ':
      if (req.type === 'list_envs' && result)
        for (const e of result.envs as Message[]) if (Array.isArray(e.tools) && e.tools.length) e.tools = e.tools.slice(0, -1);
      return;
    case 'stale-everywhere': {
      if (!result || !['reset', 'step', 'reset_batch', 'step_batch'].includes(req.type as string)) return;
      const key = req.type === 'reset' || req.type === 'step' ? sid : (req.session_ids as string[]).join(',');
      const current = result.obs;
      if ((req.type === 'step' || req.type === 'step_batch') && c.lastBatchObs.has(key)) result.obs = c.lastBatchObs.get(key);
      c.lastBatchObs.set(key, current);
      return;
    }
    default:
  }
}

/** [H, W, C] to [C, H, W]. */
function channelsFirst(t: Tensor): Tensor {
  const [h, w, ch] = t.shape as [number, number, number];
  const out = new Uint8Array(t.size);
  const src = t.bytes();
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let k = 0; k < ch; k++) out[k * h * w + y * w + x] = src[(y * w + x) * ch + k]!;
  return new Tensor('uint8', [ch, h, w], out);
}

function renameTypes(schema: unknown): void {
  if (!schema || typeof schema !== 'object') return;
  const s = schema as Message;
  if (s.type === 'number') s.type = 'float';
  if (s.type === 'integer') s.type = 'int';
  for (const value of Object.values(s)) renameTypes(value);
}

function rows(t: Tensor): Tensor[] {
  const n = t.shape[0] ?? 0;
  const per = n ? t.size / n : 0;
  return Array.from({ length: n }, (_, i) => new Tensor(t.dtype, t.shape.slice(1), t.data.subarray(i * per, (i + 1) * per) as never));
}

/** Rewrites ±Infinity bounds of every Box in a space description to ±3.4e38, in place. */
function finiteBounds(space: unknown): void {
  if (!space || typeof space !== 'object') return;
  const s = space as Message;
  for (const key of ['low', 'high'] as const) {
    const bound = s[key];
    if (bound instanceof Tensor && (bound.dtype === 'float32' || bound.dtype === 'float64')) {
      s[key] = Tensor.from(
        bound.dtype,
        bound.shape,
        bound.toNumbers().map((v) => (v === Infinity ? 3.4e38 : v === -Infinity ? -3.4e38 : v)),
      );
    }
  }
  for (const value of Object.values(s)) if (value && typeof value === 'object' && !(value instanceof Tensor)) finiteBounds(value);
}
