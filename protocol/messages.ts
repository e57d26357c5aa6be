/**
 * Every wire message, one zod schema each; TypeScript types are inferred, never written by hand.
 *
 * A request is `{id, type, ...fields}`; its answer is `{id, type: 'result', result}` or
 * `{id, type: 'error', error: {code, message, details}}`. The server may also send
 * `{type: 'event', event, ...}` frames with no id. `docs/schemas/*.json` is generated from these
 * schemas (`npm run gen:schemas`) and a test fails when it is stale.
 *
 * @example
 * const req: StepRequest = { id: 7, type: 'step', session_id: 's_abc', action: 1 };
 */
import { z } from 'zod';

import { SpaceSchema, TensorSchema } from './spaces.ts';

/**
 * The protocol version this build's clients speak, and every version its server accepts. The
 * welcome carries the version the client asked for, and the server answers in that version's forms.
 * Version 2 batches a Dict observation key by key in reset_batch and step_batch answers
 * (protocol/batch.ts); version 1 clients get one map per session there.
 */
export const PROTOCOL_VERSION = 2;
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [2, 1];

export const RequestIdSchema = z.number().int().nonnegative().describe('client-chosen id, echoed in the answer; unique per client across reconnects');
export const SessionIdSchema = z.string().min(1).max(128);
export const BytesSchema = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, { message: 'expected msgpack bin bytes' })
  .meta({ id: 'Bytes', description: 'msgpack bin' });
/** Any msgpack value (tensors included); checked against the env's spaces, not the schema. */
export const ValueSchema = z.unknown().meta({ id: 'Value', description: 'any msgpack value; tensors as extension type 1' });
const OptionsSchema = z.record(z.string(), z.unknown()).nullable().optional();
/**
 * Seeds are integers in [0, 2^53 - 1]: every env's RNG takes a JavaScript number, and a larger seed
 * would collide with another after rounding (two seeds, one episode).
 */
const SeedSchema = z
  .number({ error: (issue) => (typeof issue.input === 'bigint' ? 'seeds above 2^53 - 1 are not supported' : undefined) })
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER, 'seeds above 2^53 - 1 are not supported')
  .nullable()
  .optional()
  .describe('integer seed in [0, 2^53 - 1]; null keeps the current RNG stream');

export const AUTORESET_MODES = ['next_step', 'same_step', 'disabled'] as const;
export const AutoresetModeSchema = z.enum(AUTORESET_MODES);
export type AutoresetMode = z.infer<typeof AutoresetModeSchema>;

export const RENDER_FORMATS = ['tensor', 'png', 'jpeg'] as const;

// ---------------------------------------------------------------------------------------------
// Requests

const AckSchema = z
  .number()
  .int()
  .optional()
  .describe('optional: every request with an id up to this one has been answered and received; the server may forget those answers');
/**
 * What a request declares about itself, next to its schema: whether running it changes a session or
 * the server (running it twice differs from running it once), and whether the server keeps its
 * answer for a retry after a reconnect (so a retried request is answered from memory, never run twice).
 */
export interface MessageFacts {
  readonly changesState: boolean;
  readonly answerKept: boolean;
}
const READS: MessageFacts = { changesState: false, answerKept: false };
const CHANGES: MessageFacts = { changesState: true, answerKept: true };

const req = <T extends string, S extends z.ZodRawShape>(type: T, facts: MessageFacts, shape: S) =>
  Object.assign(z.object({ id: RequestIdSchema, type: z.literal(type), ack: AckSchema, ...shape }).strict(), { facts });

/**
 * The `client_name` the conformance suite says hello with: a server counts the errors it answers
 * such a client apart from its users' (`gymwire_conformance_errors_total`), so the suite's
 * deliberate bad requests do not read as faults on dashboards and in the viewer.
 */
export const CONFORMANCE_CLIENT_NAME = 'gymwire-conformance';

// hello attaches a client (state) but is never answered from memory: a reconnect sends a new one.
export const HelloRequestSchema = req(
  'hello',
  { changesState: true, answerKept: false },
  {
    protocol_version: z.number().int().positive(),
    client_name: z.string().max(256).optional(),
    token: z.string().max(4096).optional().describe('auth token, required when the server was started with one'),
    resume_token: z.string().max(256).optional().describe('from an earlier welcome: re-attaches that client’s sessions'),
  },
);
export const ListEnvsRequestSchema = req('list_envs', READS, {});
export const MakeRequestSchema = req('make', CHANGES, {
  env_id: z.string().min(1).max(256),
  kwargs: z.record(z.string(), z.unknown()).optional(),
});
export const ResetRequestSchema = req('reset', CHANGES, { session_id: SessionIdSchema, seed: SeedSchema, options: OptionsSchema });
export const StepRequestSchema = req('step', CHANGES, { session_id: SessionIdSchema, action: ValueSchema });
export const ResetBatchRequestSchema = req('reset_batch', CHANGES, {
  session_ids: z.array(SessionIdSchema).min(1),
  seeds: z.array(SeedSchema).nullable().optional().describe('one seed per session, or absent'),
  options: OptionsSchema,
});
export const StepBatchRequestSchema = req('step_batch', CHANGES, {
  session_ids: z.array(SessionIdSchema).min(1),
  actions: ValueSchema.describe('a tensor whose first dimension is the number of sessions, or an array of one action per session'),
  autoreset_mode: AutoresetModeSchema.default('next_step'),
});
export const RenderRequestSchema = req('render', READS, {
  session_id: SessionIdSchema,
  format: z.enum(RENDER_FORMATS).default('tensor'),
  quality: z.number().int().min(1).max(100).optional().describe('JPEG quality'),
});
export const ListToolsRequestSchema = req('list_tools', READS, { session_id: SessionIdSchema });
export const ExecuteRequestSchema = req('execute', CHANGES, {
  session_id: SessionIdSchema,
  tool: z.string().min(1),
  args: z.record(z.string(), z.unknown()).default({}),
});
export const GetStateRequestSchema = req('get_state', READS, { session_id: SessionIdSchema });
export const SetStateRequestSchema = req('set_state', CHANGES, { session_id: SessionIdSchema, state: BytesSchema });
export const CloseRequestSchema = req('close', CHANGES, { session_id: SessionIdSchema });
export const PingRequestSchema = req('ping', READS, { payload: ValueSchema.optional() });

export const REQUEST_SCHEMAS = {
  hello: HelloRequestSchema,
  list_envs: ListEnvsRequestSchema,
  make: MakeRequestSchema,
  reset: ResetRequestSchema,
  step: StepRequestSchema,
  reset_batch: ResetBatchRequestSchema,
  step_batch: StepBatchRequestSchema,
  render: RenderRequestSchema,
  list_tools: ListToolsRequestSchema,
  execute: ExecuteRequestSchema,
  get_state: GetStateRequestSchema,
  set_state: SetStateRequestSchema,
  close: CloseRequestSchema,
  ping: PingRequestSchema,
} as const;
export type RequestType = keyof typeof REQUEST_SCHEMAS;
export const REQUEST_TYPES = Object.keys(REQUEST_SCHEMAS) as RequestType[];

/** The facts of a request type, as its schema declares them. */
export function requestFacts(type: RequestType): MessageFacts {
  return REQUEST_SCHEMAS[type].facts;
}

export const RequestSchema = z.discriminatedUnion('type', [
  HelloRequestSchema,
  ListEnvsRequestSchema,
  MakeRequestSchema,
  ResetRequestSchema,
  StepRequestSchema,
  ResetBatchRequestSchema,
  StepBatchRequestSchema,
  RenderRequestSchema,
  ListToolsRequestSchema,
  ExecuteRequestSchema,
  GetStateRequestSchema,
  SetStateRequestSchema,
  CloseRequestSchema,
  PingRequestSchema,
]);
export type Request = z.infer<typeof RequestSchema>;
export type RequestOf<T extends RequestType> = z.infer<(typeof REQUEST_SCHEMAS)[T]>;
/** What a caller writes (defaults optional). */
export type RequestInput<T extends RequestType> = Omit<z.input<(typeof REQUEST_SCHEMAS)[T]>, 'id' | 'type'>;

export type HelloRequest = RequestOf<'hello'>;
export type MakeRequest = RequestOf<'make'>;
export type StepRequest = RequestOf<'step'>;
export type StepBatchRequest = RequestOf<'step_batch'>;

// ---------------------------------------------------------------------------------------------
// Results

export const LimitsSchema = z.object({
  max_frame_bytes: z.number().int(),
  max_sessions_per_client: z.number().int(),
  max_sessions: z.number().int(),
  max_pending_per_session: z.number().int(),
  max_memory_bytes_per_client: z.number().int().describe('memory one client’s sessions may hold together, as their envs estimate it at make; 0: no budget'),
  max_memory_bytes: z.number().int().describe('memory every session on the server may hold together; 0: no budget'),
  idle_timeout_ms: z.number().int().describe('sessions idle this long are closed; 0 disables the reaper'),
  resume_grace_ms: z.number().int().describe('how long a disconnected client’s sessions wait for it to resume'),
  heartbeat_ms: z.number().int(),
});
export type Limits = z.infer<typeof LimitsSchema>;

export const WelcomeResultSchema = z.object({
  protocol_version: z.number().int(),
  server_name: z.string(),
  server_version: z.string(),
  connection_id: z.string(),
  resume_token: z.string(),
  resumed: z.boolean().describe('true when resume_token re-attached earlier sessions'),
  sessions: z.array(SessionIdSchema).describe('the sessions this client owns (after a resume)'),
  limits: LimitsSchema,
});

/** OpenAI function-calling tool description. */
export const ToolDescriptionSchema = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) }),
});
export type ToolDescription = z.infer<typeof ToolDescriptionSchema>;

export const EnvListingSchema = z.object({
  id: z.string(),
  description: z.string(),
  max_episode_steps: z.number().int().nullable(),
  tags: z.array(z.string()),
  kwargs_schema: z.record(z.string(), z.unknown()).nullable(),
  tools: z.array(ToolDescriptionSchema).nullable().describe("the env's tools, when known before any session exists; null when only a made session knows them"),
});
export const ListEnvsResultSchema = z.object({ envs: z.array(EnvListingSchema) });

export const MakeResultSchema = z.object({
  session_id: SessionIdSchema,
  env_id: z.string(),
  observation_space: SpaceSchema,
  action_space: SpaceSchema,
  metadata: z.record(z.string(), z.unknown()),
  render_mode: z.string().nullable(),
  max_episode_steps: z.number().int().nullable(),
  tools: z.array(ToolDescriptionSchema),
});
export const ResetResultSchema = z.object({ obs: ValueSchema, info: z.record(z.string(), z.unknown()) });
export const StepResultSchema = z.object({
  obs: ValueSchema,
  reward: z.number(),
  terminated: z.boolean(),
  truncated: z.boolean(),
  info: z.record(z.string(), z.unknown()),
});
export const BatchErrorSchema = z.object({ code: z.string(), message: z.string() }).nullable();
export const ResetBatchResultSchema = z.object({
  obs: ValueSchema.describe(
    'a tensor stacked over sessions when every observation is a tensor of one dtype and shape (integers: an int64 vector); for a Dict space whose observations share their keys, a map holding each key’s values in this same form (stacked, a nested map, or an array): a Dict space’s batch; else an array',
  ),
  infos: z.array(z.record(z.string(), z.unknown())),
});
export const StepBatchResultSchema = z.object({
  obs: ValueSchema.describe('stacked like reset_batch; a failed slot holds zeros (for each key of a map; see errors)'),
  rewards: TensorSchema.describe('float64 [N]'),
  terminated: TensorSchema.describe('bool [N]'),
  truncated: TensorSchema.describe('bool [N]'),
  infos: z.array(z.record(z.string(), z.unknown())).describe('same_step mode adds final_obs and final_info to a session that ended and was reset'),
  errors: z
    .array(BatchErrorSchema)
    .describe('per session: null, or the env failure that stopped that step (the session stays usable, as after a failed single step)'),
});
export const RenderResultSchema = z.object({
  format: z.enum(RENDER_FORMATS),
  frame: z.union([TensorSchema, BytesSchema, z.string()]).describe('uint8 [H,W,C] tensor, PNG/JPEG bytes, or text for ansi envs'),
});
export const ListToolsResultSchema = z.object({ tools: z.array(ToolDescriptionSchema) });
export const ExecuteResultSchema = z.object({ result: ValueSchema });
export const GetStateResultSchema = z.object({ state: BytesSchema });
export const SetStateResultSchema = z.object({});
export const CloseResultSchema = z.object({ closed: z.boolean().describe('false when the session was already closed') });
export const PingResultSchema = z.object({ payload: ValueSchema.optional(), server_time_ms: z.number() });

export const RESULT_SCHEMAS = {
  hello: WelcomeResultSchema,
  list_envs: ListEnvsResultSchema,
  make: MakeResultSchema,
  reset: ResetResultSchema,
  step: StepResultSchema,
  reset_batch: ResetBatchResultSchema,
  step_batch: StepBatchResultSchema,
  render: RenderResultSchema,
  list_tools: ListToolsResultSchema,
  execute: ExecuteResultSchema,
  get_state: GetStateResultSchema,
  set_state: SetStateResultSchema,
  close: CloseResultSchema,
  ping: PingResultSchema,
} as const satisfies Record<RequestType, z.ZodType>;
export type ResultOf<T extends RequestType> = z.infer<(typeof RESULT_SCHEMAS)[T]>;
export type Welcome = ResultOf<'hello'>;
export type MakeResult = ResultOf<'make'>;

// ---------------------------------------------------------------------------------------------
// Responses and events

export const WireErrorSchema = z.object({
  code: z.string().describe('a code from the registry (docs/errors.md); clients treat unknown codes as ENV_ERR_INTERNAL'),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).default({}),
});
export type WireError = z.infer<typeof WireErrorSchema>;

export const ResultResponseSchema = z.object({ id: RequestIdSchema, type: z.literal('result'), result: z.record(z.string(), z.unknown()) });
export const ErrorResponseSchema = z.object({
  id: RequestIdSchema.nullable().describe('null when the frame was too broken to read an id from'),
  type: z.literal('error'),
  error: WireErrorSchema,
});
/** The events a server sends unasked (frames with no id). */
export const SERVER_EVENTS = ['session_closed', 'shutdown'] as const;
export const EventSchema = z.object({
  type: z.literal('event'),
  event: z.enum(SERVER_EVENTS),
  session_id: SessionIdSchema.optional(),
  reason: z.string(),
});
export type ServerEvent = z.infer<typeof EventSchema>;
export const ServerMessageSchema = z.discriminatedUnion('type', [ResultResponseSchema, ErrorResponseSchema, EventSchema]);
export type ServerMessage = z.infer<typeof ServerMessageSchema>;
