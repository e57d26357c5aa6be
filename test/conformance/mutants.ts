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
import { decode, encode } from '../../protocol/codec.ts';
import { REQUEST_SCHEMAS } from '../../protocol/messages.ts';
import type { RequestType } from '../../protocol/messages.ts';
import { Random } from '../../runtime/random.ts';
import { contains, SpaceSchema } from '../../protocol/spaces.ts';
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
} as const;
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
}

type Message = Record<string, unknown>;

/** A connector whose connections talk to `mutant` (the real server behind `inner`). */
export function mutantConnector(inner: Connector, mutant: MutantName): Connector {
  const byResumeToken = new Map<string, LogicalClient>();
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
        if (!m || typeof m !== 'object' || Array.isArray(m) || typeof m.id !== 'number') return t.send(frame);
        if (m.type === 'hello') {
          const token = typeof m.resume_token === 'string' ? m.resume_token : null;
          resumed = token !== null && byResumeToken.has(token);
          client = (token && byResumeToken.get(token)) || { highestId: 0, injected: 0, requests: new Map(), actionSpaces: new Map(), lastObs: new Map() };
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
    t.onclose = (code, reason) => wrapped.onclose?.(code, reason);
    t.onmessage = (frame) => {
      const m = decode(frame) as Message;
      if (typeof m.id === 'number' && swallowed.delete(m.id)) return;
      const c = client;
      const entry = c && typeof m.id === 'number' ? c.requests.get(m.id) : undefined;
      if (!c || !entry) return wrapped.onmessage?.(frame);
      const req = entry.message;
      const answer: Message = { ...m, id: entry.clientId };
      const result = answer.result as Message | undefined;
      const errorCode = (answer.error as { code?: string } | undefined)?.code;
      if (req.type === 'hello' && result && typeof result.resume_token === 'string') byResumeToken.set(result.resume_token, c);
      if (req.type === 'make' && result) {
        c.actionSpaces.set(result.session_id as string, SpaceSchema.parse(result.action_space));
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
      if (mutant === 'ping-payload-dropped' && req.type === 'ping' && result) delete result.payload;
      if (mutant === 'tool-args-unchecked' && errorCode === 'ENV_ERR_INVALID_TOOL_ARGS')
        return wrapped.onmessage?.(encode({ id: entry.clientId, type: 'result', result: { result: null } }));
      if (mutant === 'close-not-idempotent' && req.type === 'close' && result && result.closed === false) {
        return wrapped.onmessage?.(
          encode({ id: entry.clientId, type: 'error', error: { code: 'ENV_ERR_UNKNOWN_SESSION', message: 'no such session', details: {} } }),
        );
      }
      if (mutant === 'error-id-null' && answer.type === 'error') answer.id = null;
      wrapped.onmessage?.(encode(answer));
    };
    return wrapped;
  };
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
