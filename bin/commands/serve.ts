import { readFileSync } from 'node:fs';

import type { Command } from 'commander';

import { DataRoots } from '../../envs/core/data-roots.ts';
import { threadNice } from '../../envs/core/thread-priority.ts';
import { defaultRegistry } from '../../envs/index.ts';
import { parseBusyPoll } from '../../runtime/busy-poll.ts';
import { DEFAULT_ADMISSION_LIMITS } from '../../server/admission.ts';
import { DEFAULT_MAX_ABANDONED_CALLS, hostEnvs } from '../../envs/hosted/index.ts';
import { DEFAULT_PLUGIN_TIMEOUT_MS } from '../../envs/hosted/plugins.ts';
import { hostTorchWorldModel } from '../../envs/hosted/world-model.ts';
import { startServer } from '../../server/index.ts';
import { MCP_DEFAULTS, mountMcp } from '../../server/mcp/index.ts';
import { DEFAULT_OUTBOUND_LIMITS } from '../../server/outbound.ts';
import { DEFAULT_VIEWER_MAX_BACKLOG_BYTES } from '../../server/viewer/events.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import type { TransportName } from '../../server/index.ts';
import { stderrLogger } from './logger.ts';
import { parseBytes, parseCount, parseDuration } from './units.ts';

export interface ServeOptions {
  host: string;
  port: string;
  transport: TransportName;
  token?: string;
  tokenFile?: string;
  logLevel: string;
  idleTimeout: string;
  maxSessions: string;
  maxSessionsPerClient: string;
  maxFrameBytes: string;
  resumeGrace: string;
  busyPollUs: string;
  drainTimeout: string;
  maxMemoryPerClient: string;
  maxMemory: string;
  maxDepartedReplyBytes: string;
  maxOutboundBytes: string;
  outboundDrainTimeout: string;
  viewerMaxBacklog: string;
  check?: boolean;
  allowOrigin?: string[];
  allowHost?: string[];
  mcpAllowOrigin?: string[];
  maxConnections: string;
  maxPreauthPerIp: string;
  helloTimeout: string;
  dataRoot: string[];
  mcpMaxSessions: string;
  mcpMaxSessionsPerCaller: string;
  mcpMaxBodyBytes: string;
  gym?: string[];
  python?: string[];
  id?: string[];
  plugin?: string[];
  pluginTimeout: string;
  pythonExe?: string;
  workers?: string;
  workerTimeout: string;
  maxAbandonedCalls: string;
  envCallTimeout: string;
  simulators: boolean;
  evacModelDir?: string;
  evacBatchSize: string;
  evacBatchWindow: string;
  evacThreads?: string;
  evacDevice?: string;
  torchWorldModel?: string;
  torchWorldModelKwargs?: string;
  torchWorldModelDevice: string;
  torchWorldModelBatchSize: string;
  torchWorldModelBatchWindow: string;
  torchWorldModelMemoryBudget?: string;
}

/** The server's token: --token, --token-file or GYMWIRE_TOKEN (at most one of the flags), or null. */
export function resolveToken(opts: { token?: string; tokenFile?: string }, env: NodeJS.ProcessEnv): string | null {
  if (opts.token !== undefined && opts.tokenFile !== undefined) throw new Error('give either --token or --token-file, not both');
  if (opts.tokenFile !== undefined) {
    // One line; its line break (what echo and editors leave) is not part of the token.
    const token = readFileSync(opts.tokenFile, 'utf8').replace(/\r?\n$/, '');
    if (token === '') throw new Error(`--token-file ${opts.tokenFile} is empty`);
    return token;
  }
  return opts.token ?? (env.GYMWIRE_TOKEN || null);
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'serve every registered env over WebSockets (plus /healthz, /metrics, /mcp and the viewer at / on the same port); durations take ms, s, m or h (a bare number is ms), sizes k, m, g (a bare number is bytes)',
    )
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '8765')
    .option('--transport <name>', 'ws or uws', 'ws')
    .option('--token <token>', 'require this auth token in hello; visible to every user in the process list: prefer GYMWIRE_TOKEN or --token-file')
    .option('--token-file <path>', 'read the auth token from this file (its first line)')
    .option('--log-level <level>', 'pino log level', 'info')
    .option('--idle-timeout <duration>', 'close sessions idle this long (0 disables the reaper)', '10m')
    .option('--max-sessions <n>', 'sessions the server holds at most', '8192')
    .option('--max-sessions-per-client <n>', 'sessions one client may hold', '1024')
    .option('--max-frame-bytes <size>', 'largest frame accepted', '64m')
    .option('--resume-grace <duration>', 'how long a disconnected client may resume its sessions', '60s')
    .option(
      '--busy-poll-us <us>',
      "poll the sockets after each answer instead of sleeping, saving a core wake-up for clients that send again soon (pipelined rollouts on the same host): 'auto' adapts the window to the gaps between answers and requests (off for clients that answer late), N polls N µs after every answer, 0 never polls",
      'auto',
    )
    .option(
      '--drain-timeout <duration>',
      'on SIGTERM or Ctrl-C: time to answer in-flight requests and let clients read their answers before connections are dropped',
      '10s',
    )
    .option('--max-memory-per-client <size>', 'memory one client’s sessions may hold, as their envs estimate it at make (0: no budget)', '8g')
    .option('--max-memory <size>', 'memory all sessions may hold together (0: no budget)', '16g')
    .option(
      '--max-departed-reply-bytes <size>',
      'answers kept for disconnected clients to resume with, all together; those that left first lose theirs',
      '256m',
    )
    .option(
      '--max-outbound-bytes <size>',
      'answers waiting to be written to one connection past which the server stops reading from it (0: no bound)',
      String(DEFAULT_OUTBOUND_LIMITS.maxBytes),
    )
    .option(
      '--outbound-drain-timeout <duration>',
      'how long a connection over --max-outbound-bytes has to read its answers before it is closed (code 4008)',
      String(DEFAULT_OUTBOUND_LIMITS.drainTimeoutMs),
    )
    .option(
      '--viewer-max-backlog <size>',
      'updates one viewer event stream may leave unread before it gets no more (skipped ones fold into the next); past --outbound-drain-timeout it is closed',
      String(DEFAULT_VIEWER_MAX_BACKLOG_BYTES),
    )
    .option('--check', 'check every observation against its space (slower; for env development)')
    .option(
      '--allow-origin <origin...>',
      "browser origins (https://app.example:8443) allowed besides loopback ones on the WebSocket and every HTTP route; others get 403; '*' allows any",
    )
    .option(
      '--allow-host <name...>',
      "Host names served besides IP addresses, loopback names and this machine's hostname; checked only without a token; '*' allows any",
    )
    .option('--mcp-allow-origin <origin...>', 'same as --allow-origin (kept for existing scripts)')
    .option('--max-connections <n>', 'connections open at once, greeted or not (0: no cap)', String(DEFAULT_ADMISSION_LIMITS.maxConnections))
    .option(
      '--max-preauth-per-ip <n>',
      'connections from one IP address that have not said hello yet (0: no cap)',
      String(DEFAULT_ADMISSION_LIMITS.maxPreAuthPerIp),
    )
    .option(
      '--hello-timeout <duration>',
      'close connections that send no valid hello within this long (0: never)',
      String(DEFAULT_ADMISSION_LIMITS.helloTimeoutMs),
    )
    .option(
      '--data-root <dir>',
      'a directory whose data clients may name in make kwargs (model_dir, dataset_dir, scene_dir); repeatable; without it only the bundled assets',
      (dir: string, dirs: string[]) => [...dirs, dir],
      [] as string[],
    )
    .option(
      '--mcp-max-sessions <n>',
      'env sessions made through /mcp at most, across callers; when full, the least recently used idle session of the caller holding the most gives way',
      String(MCP_DEFAULTS.maxSessions),
    )
    .option(
      '--mcp-max-sessions-per-caller <n>',
      'env sessions one remote address makes through /mcp at most; its next make_env closes its own least recently used idle session',
      String(MCP_DEFAULTS.maxSessionsPerCaller),
    )
    .option('--mcp-max-body-bytes <size>', 'largest /mcp request body read; larger ones get 413 unread', String(MCP_DEFAULTS.maxBodyBytes))
    .option('--gym <id...>', 'also serve these Gymnasium registry ids as gym/<id> (module:ID imports the module first), run by Python workers')
    .option('--python <module:callable...>', 'also serve these callables returning a gymnasium.Env (kwargs from make) as python/<module:callable>')
    .option('--id <name...>', 'ids for the --python callables, in order')
    .option('--plugin <file...>', 'load TS/JS modules whose register(registry) export registers envs')
    .option(
      '--plugin-timeout <duration>',
      'how long each --plugin may take to import and register its envs before serve stops, naming it',
      String(DEFAULT_PLUGIN_TIMEOUT_MS),
    )
    .option('--python-exe <path>', 'the Python that runs hosted envs (also GYMWIRE_PYTHON; default python3)')
    .option('--workers <n>', 'Python worker processes at most (default: one per core)')
    .option('--worker-timeout <duration>', 'how long one call of a hosted Python env may take; past it the call fails and its session is lost', '60s')
    .option(
      '--max-abandoned-calls <n>',
      'calls past --worker-timeout still running in one Python worker, at most; past it the worker is restarted (its sessions are lost)',
      String(DEFAULT_MAX_ABANDONED_CALLS),
    )
    .option('--no-simulators', "do not serve the robosuite, Meta-World and LIBERO families even where their packages are installed in the workers' Python")
    .option(
      '--env-call-timeout <duration>',
      'how long one call of an in-process env, an env thread (NAVSIM, Bench2Drive) or the world-model worker may take; past it the call fails and a hung thread is replaced',
      '5m',
    )
    .option(
      '--evac-model-dir <dir>',
      'world model served to EvacWorldModel-v0 makes that name neither model_dir nor resolution (default: the bundled tiny one)',
    )
    .option('--evac-batch-size <n>', 'world-model chunk steps run together at most (1: no batching)', '32')
    .option('--evac-batch-window <duration>', 'how long a world-model chunk step waits for others to share its run', '2ms')
    .option('--evac-threads <n>', 'onnxruntime intra-op threads for world models (0: onnxruntime chooses; default one per core, at most 4)')
    .option(
      '--evac-device <device>',
      'cpu or cuda for world models without a device kwarg (default GYMWIRE_EVAC_DEVICE or cpu; cuda falls back to cpu, logged)',
    )
    .option(
      '--torch-world-model <module:callable>',
      'serve this torch world model (a callable returning a torch.nn.Module, docs/world-models.md) as gymwire/TorchWorldModel-v0, in a Python worker of its own',
    )
    .option('--torch-world-model-kwargs <json>', 'keyword arguments for the --torch-world-model callable, as a JSON object')
    .option('--torch-world-model-device <device>', 'auto (CUDA when torch sees one), cpu or cuda[:N]', 'auto')
    .option('--torch-world-model-batch-size <n>', 'world-model steps in one forward pass at most (1: no batching)', '32')
    .option('--torch-world-model-batch-window <duration>', 'how long a world-model step waits for others to join its forward pass', '2ms')
    .option(
      '--torch-world-model-memory-budget <size>',
      'device memory the world model may use with all its sessions (default: the card’s memory on CUDA, none on the CPU)',
    )
    .action(async (opts: ServeOptions) => {
      if (opts.transport !== 'ws' && opts.transport !== 'uws') throw new Error(`--transport must be ws or uws, got ${opts.transport}`);
      const busyPollUs = parseBusyPoll(opts.busyPollUs);
      // Env threads start with their first session: a bad GYMWIRE_THREAD_NICE stops the server here instead.
      threadNice();
      const token = resolveToken(opts, process.env);
      const allowedOrigins = [...(opts.allowOrigin ?? []), ...(opts.mcpAllowOrigin ?? [])];
      const drainTimeoutMs = parseDuration('--drain-timeout', opts.drainTimeout);
      const limits = {
        idle_timeout_ms: parseDuration('--idle-timeout', opts.idleTimeout),
        resume_grace_ms: parseDuration('--resume-grace', opts.resumeGrace),
        max_sessions: parseCount('--max-sessions', opts.maxSessions),
        max_sessions_per_client: parseCount('--max-sessions-per-client', opts.maxSessionsPerClient),
        max_frame_bytes: parseBytes('--max-frame-bytes', opts.maxFrameBytes),
        max_memory_bytes_per_client: parseBytes('--max-memory-per-client', opts.maxMemoryPerClient),
        max_memory_bytes: parseBytes('--max-memory', opts.maxMemory),
      };
      const admission = {
        maxConnections: parseCount('--max-connections', opts.maxConnections),
        maxPreAuthPerIp: parseCount('--max-preauth-per-ip', opts.maxPreauthPerIp),
        helloTimeoutMs: parseDuration('--hello-timeout', opts.helloTimeout),
      };
      const mcpLimits = {
        maxSessions: parseCount('--mcp-max-sessions', opts.mcpMaxSessions),
        maxSessionsPerCaller: parseCount('--mcp-max-sessions-per-caller', opts.mcpMaxSessionsPerCaller),
        maxBodyBytes: parseBytes('--mcp-max-body-bytes', opts.mcpMaxBodyBytes),
      };
      const viewerMaxBacklog = parseBytes('--viewer-max-backlog', opts.viewerMaxBacklog);
      const hosted = hostedOptions(opts);
      const logger = stderrLogger(opts.logLevel);
      // Signals are handled from here on, before env threads and the server start: a SIGTERM that
      // arrives while they start still shuts down in order (once the server is up) with exit code 0.
      let server: Awaited<ReturnType<typeof startServer>> | null = null;
      let stopping = false;
      const shutdown = () =>
        void server!
          .close(drainTimeoutMs)
          .then(() => registry.close())
          .then(() => process.exit(0));
      const stop = (signal: string) => {
        // A second Ctrl-C is a person insisting: exit now. A repeated SIGTERM is not: a service
        // manager that signals the whole process group (systemd's default) reaches this process
        // both directly and through the launcher that re-ran it, and the drain must go on.
        if (stopping && signal === 'SIGINT') process.exit(1);
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'shutting down: answering in-flight requests');
        if (server) shutdown();
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
      const envCallTimeoutMs = parseDuration('--env-call-timeout', opts.envCallTimeout);
      if (envCallTimeoutMs === 0) throw new Error('--env-call-timeout must be above 0');
      const registry = defaultRegistry({ dataRoots: new DataRoots(opts.dataRoot), logger, evac: evacOptions(opts), threadCallTimeoutMs: envCallTimeoutMs });
      await hostEnvs(registry, { ...hosted, logger, check: opts.check ?? false, simulators: opts.simulators });
      const torchWorldModel = torchWorldModelOptions(opts);
      if (torchWorldModel)
        await hostTorchWorldModel(registry, { ...torchWorldModel, pythonExe: hosted.pythonExe, workerTimeoutMs: hosted.workerTimeoutMs, logger });
      server = await startServer({
        registry,
        host: opts.host,
        port: parseCount('--port', opts.port),
        transport: opts.transport,
        token,
        logger,
        checkEnvs: opts.check ?? false,
        envCallTimeoutMs,
        busyPollUs,
        maxDepartedReplyBytes: parseBytes('--max-departed-reply-bytes', opts.maxDepartedReplyBytes),
        outbound: {
          maxBytes: parseBytes('--max-outbound-bytes', opts.maxOutboundBytes),
          drainTimeoutMs: parseDuration('--outbound-drain-timeout', opts.outboundDrainTimeout),
        },
        limits,
        admission,
        origins: { allowedOrigins, allowedHosts: opts.allowHost ?? [] },
        // MCP (and the viewer) need HTTP routes, which the ws transport serves.
        mountRoutes: (routes, core) => {
          void mountMcp(routes, core, { logger, allowedOrigins, ...mcpLimits });
          mountViewer(routes, core, { maxBacklogBytes: viewerMaxBacklog });
        },
      });
      process.stdout.write(`gymwire serving ${server.core.registry.ids().length} envs on ${server.url} (transport ${opts.transport})\n`);
      if (opts.transport === 'uws')
        process.stdout.write('the viewer and /mcp are not served with --transport uws (only /healthz and /metrics are); use --transport ws for them\n');
      if (stopping) shutdown();
    });
}

/** The hosted-env flags, checked: each --id belongs to the --python callable in the same position. */
function hostedOptions(opts: ServeOptions) {
  const python = opts.python ?? [];
  const ids = opts.id ?? [];
  if (ids.length > python.length) throw new Error(`--id gives ${ids.length} ids for ${python.length} --python callables`);
  const workers = opts.workers === undefined ? undefined : parseCount('--workers', opts.workers);
  if (workers === 0) throw new Error('--workers must be at least 1');
  const workerTimeoutMs = parseDuration('--worker-timeout', opts.workerTimeout);
  if (workerTimeoutMs === 0) throw new Error('--worker-timeout must be above 0');
  const maxAbandonedCalls = parseCount('--max-abandoned-calls', opts.maxAbandonedCalls);
  return {
    gym: opts.gym,
    python: python.map((target, i) => ({ target, id: ids[i] })),
    plugins: opts.plugin,
    pluginTimeoutMs: parseDuration('--plugin-timeout', opts.pluginTimeout),
    pythonExe: opts.pythonExe ?? process.env.GYMWIRE_PYTHON,
    workers,
    workerTimeoutMs,
    maxAbandonedCalls,
  };
}

/** The torch world-model flags, checked; null without --torch-world-model. */
export function torchWorldModelOptions(
  opts: Pick<
    ServeOptions,
    | 'torchWorldModel'
    | 'torchWorldModelKwargs'
    | 'torchWorldModelDevice'
    | 'torchWorldModelBatchSize'
    | 'torchWorldModelBatchWindow'
    | 'torchWorldModelMemoryBudget'
  >,
) {
  if (!opts.torchWorldModel) return null;
  let modelKwargs: unknown = {};
  if (opts.torchWorldModelKwargs !== undefined) {
    try {
      modelKwargs = JSON.parse(opts.torchWorldModelKwargs);
    } catch (err) {
      throw new Error(`--torch-world-model-kwargs is not JSON: ${(err as Error).message}`, { cause: err });
    }
    if (typeof modelKwargs !== 'object' || modelKwargs === null || Array.isArray(modelKwargs))
      throw new Error('--torch-world-model-kwargs must be a JSON object');
  }
  const maxBatch = parseCount('--torch-world-model-batch-size', opts.torchWorldModelBatchSize);
  if (maxBatch === 0) throw new Error('--torch-world-model-batch-size must be at least 1');
  return {
    model: opts.torchWorldModel,
    modelKwargs: modelKwargs as Record<string, unknown>,
    device: opts.torchWorldModelDevice,
    maxBatch,
    batchWindowMs: parseDuration('--torch-world-model-batch-window', opts.torchWorldModelBatchWindow),
    memoryBudgetBytes:
      opts.torchWorldModelMemoryBudget === undefined ? undefined : parseBytes('--torch-world-model-memory-budget', opts.torchWorldModelMemoryBudget),
  };
}

/** The world-model flags, checked. */
export function evacOptions(opts: Pick<ServeOptions, 'evacModelDir' | 'evacBatchSize' | 'evacBatchWindow' | 'evacThreads' | 'evacDevice'>) {
  const maxBatch = parseCount('--evac-batch-size', opts.evacBatchSize);
  if (maxBatch === 0) throw new Error('--evac-batch-size must be at least 1');
  const device = opts.evacDevice;
  if (device !== undefined && device !== 'cpu' && device !== 'cuda') throw new Error(`--evac-device must be cpu or cuda, got ${device}`);
  return {
    defaultModelDir: opts.evacModelDir,
    maxBatch,
    batchWindowMs: parseDuration('--evac-batch-window', opts.evacBatchWindow),
    threads: opts.evacThreads === undefined ? undefined : parseCount('--evac-threads', opts.evacThreads),
    device: device as 'cpu' | 'cuda' | undefined,
  };
}
