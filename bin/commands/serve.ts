import type { Command } from 'commander';

import { defaultRegistry } from '../../envs/index.ts';
import { parseBusyPoll } from '../../protocol/busy-poll.ts';
import { hostEnvs } from '../../server/hosted/index.ts';
import { startServer } from '../../server/index.ts';
import { mountMcp } from '../../server/mcp/index.ts';
import { mountViewer } from '../../server/viewer/index.ts';
import type { TransportName } from '../../server/index.ts';
import { stderrLogger } from './logger.ts';

export interface ServeOptions {
  host: string;
  port: string;
  transport: TransportName;
  token?: string;
  logLevel: string;
  idleTimeout: string;
  maxSessions: string;
  maxSessionsPerClient: string;
  maxFrameBytes: string;
  resumeGrace: string;
  busyPollUs: string;
  check?: boolean;
  mcpAllowOrigin?: string[];
  gym?: string[];
  python?: string[];
  id?: string[];
  plugin?: string[];
  pythonExe?: string;
  workers?: string;
  workerTimeout: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve every registered env over WebSockets (plus /healthz, /metrics, /mcp and the viewer at / on the same port)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '8765')
    .option('--transport <name>', 'ws or uws', 'ws')
    .option('--token <token>', 'require this auth token in hello (also GYMWIRE_TOKEN)')
    .option('--log-level <level>', 'pino log level', 'info')
    .option('--idle-timeout <ms>', 'close sessions idle this long (0 disables the reaper)', String(10 * 60 * 1000))
    .option('--max-sessions <n>', 'sessions the server holds at most', '8192')
    .option('--max-sessions-per-client <n>', 'sessions one client may hold', '1024')
    .option('--max-frame-bytes <n>', 'largest frame accepted (bytes)', String(64 * 1024 * 1024))
    .option('--resume-grace <ms>', 'how long a disconnected client may resume its sessions', '60000')
    .option('--busy-poll-us <us>', "poll the sockets after each answer instead of sleeping, saving a core wake-up for clients that send again soon (pipelined rollouts on the same host): 'auto' adapts the window to the gaps between answers and requests (off for clients that answer late), N polls N µs after every answer, 0 never polls", 'auto')
    .option('--check', 'check every observation against its space (slower; for env development)')
    .option('--mcp-allow-origin <origin...>', 'browser origins allowed to use /mcp besides loopback ones (others get 403)')
    .option('--gym <id...>', 'also serve these Gymnasium registry ids as gym/<id> (module:ID imports the module first), run by Python workers')
    .option('--python <module:callable...>', 'also serve these callables returning a gymnasium.Env (kwargs from make) as python/<module:callable>')
    .option('--id <name...>', 'ids for the --python callables, in order')
    .option('--plugin <file...>', 'load TS/JS modules whose register(registry) export registers envs')
    .option('--python-exe <path>', 'the Python that runs hosted envs (also GYMWIRE_PYTHON; default python3)')
    .option('--workers <n>', 'Python worker processes at most (default: one per core)')
    .option('--worker-timeout <ms>', 'kill and restart a Python worker that takes longer than this to answer', '60000')
    .action(async (opts: ServeOptions) => {
      if (opts.transport !== 'ws' && opts.transport !== 'uws') throw new Error(`--transport must be ws or uws, got ${opts.transport}`);
      for (const [flag, value] of Object.entries({ '--port': opts.port, '--idle-timeout': opts.idleTimeout, '--max-sessions': opts.maxSessions, '--max-sessions-per-client': opts.maxSessionsPerClient, '--max-frame-bytes': opts.maxFrameBytes, '--resume-grace': opts.resumeGrace })) {
        if (!/^\d+$/.test(value)) throw new Error(`${flag} must be a non-negative integer, got ${JSON.stringify(value)}`);
      }
      const busyPollUs = parseBusyPoll(opts.busyPollUs);
      const logger = stderrLogger(opts.logLevel);
      const registry = defaultRegistry();
      await hostEnvs(registry, { ...hostedOptions(opts), logger });
      const server = await startServer({
        registry,
        host: opts.host,
        port: Number(opts.port),
        transport: opts.transport,
        token: opts.token ?? process.env.GYMWIRE_TOKEN ?? null,
        logger,
        checkEnvs: opts.check ?? false,
        busyPollUs,
        limits: {
          idle_timeout_ms: Number(opts.idleTimeout),
          max_sessions: Number(opts.maxSessions),
          max_sessions_per_client: Number(opts.maxSessionsPerClient),
          max_frame_bytes: Number(opts.maxFrameBytes),
          resume_grace_ms: Number(opts.resumeGrace),
        },
        // MCP (and the viewer) need HTTP routes, which the ws transport serves.
        mountRoutes: (routes, core) => {
          void mountMcp(routes, core, { logger, allowedOrigins: opts.mcpAllowOrigin ?? [] });
          mountViewer(routes, core);
        },
      });
      process.stdout.write(`gymwire serving ${server.core.registry.ids().length} envs on ${server.url} (transport ${opts.transport})\n`);
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) process.exit(1);
        stopping = true;
        logger.info({ signal }, 'shutting down: answering in-flight requests');
        void server.close(10_000).then(() => registry.close()).then(() => process.exit(0));
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    });
}

/** The hosted-env flags, checked: each --id belongs to the --python callable in the same position. */
function hostedOptions(opts: ServeOptions) {
  const python = opts.python ?? [];
  const ids = opts.id ?? [];
  if (ids.length > python.length) throw new Error(`--id gives ${ids.length} ids for ${python.length} --python callables`);
  for (const [flag, value] of Object.entries({ '--workers': opts.workers, '--worker-timeout': opts.workerTimeout })) {
    if (value !== undefined && !/^[1-9]\d*$/.test(value)) throw new Error(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return {
    gym: opts.gym,
    python: python.map((target, i) => ({ target, id: ids[i] })),
    plugins: opts.plugin,
    pythonExe: opts.pythonExe ?? process.env.GYMWIRE_PYTHON,
    workers: opts.workers === undefined ? undefined : Number(opts.workers),
    workerTimeoutMs: Number(opts.workerTimeout),
  };
}
