import { readFileSync } from 'node:fs';

import type { Command } from 'commander';

import { parseBusyPoll } from '../../protocol/busy-poll.ts';
import { DEFAULT_ADMISSION_LIMITS } from '../../server/admission.ts';
import { startServer } from '../../server/index.ts';
import { MCP_DEFAULTS, mountMcp } from '../../server/mcp/index.ts';
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
  drainTimeout: string;
  check?: boolean;
  mcpAllowOrigin?: string[];
  tokenFile?: string;
  allowOrigin?: string[];
  allowHost?: string[];
  maxConnections: string;
  maxPreauthPerIp: string;
  helloTimeout: string;
  mcpMaxSessions: string;
  mcpMaxSessionsPerCaller: string;
  mcpMaxBodyBytes: string;
  dataRoot: string[];
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
    .description('serve every registered env over WebSockets (plus /healthz, /metrics, /mcp and the viewer at / on the same port)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', '8765')
    .option('--transport <name>', 'ws or uws', 'ws')
    .option('--token <token>', 'require this auth token in hello; visible to every user in the process list: prefer GYMWIRE_TOKEN or --token-file')
    .option('--token-file <path>', 'read the auth token from this file (its first line)')
    .option('--log-level <level>', 'pino log level', 'info')
    .option('--idle-timeout <ms>', 'close sessions idle this long (0 disables the reaper)', String(10 * 60 * 1000))
    .option('--max-sessions <n>', 'sessions the server holds at most', '8192')
    .option('--max-sessions-per-client <n>', 'sessions one client may hold', '1024')
    .option('--max-frame-bytes <n>', 'largest frame accepted (bytes)', String(64 * 1024 * 1024))
    .option('--resume-grace <ms>', 'how long a disconnected client may resume its sessions', '60000')
    .option('--busy-poll-us <us>', "poll the sockets after each answer instead of sleeping, saving a core wake-up for clients that send again soon (pipelined rollouts on the same host): 'auto' adapts the window to the gaps between answers and requests (off for clients that answer late), N polls N µs after every answer, 0 never polls", 'auto')
    .option('--drain-timeout <ms>', 'on SIGTERM or Ctrl-C: time to answer in-flight requests and let clients read their answers before connections are dropped', '10000')
    .option('--check', 'check every observation against its space (slower; for env development)')
    .option('--allow-origin <origin...>', "browser origins (https://app.example:8443) allowed besides loopback ones on the WebSocket and every HTTP route; others get 403; '*' allows any")
    .option('--allow-host <name...>', "Host names served besides IP addresses, loopback names and this machine's hostname; checked only without a token; '*' allows any")
    .option('--mcp-allow-origin <origin...>', 'same as --allow-origin (kept for existing scripts)')
    .option('--max-connections <n>', 'connections open at once, greeted or not (0: no cap)', String(DEFAULT_ADMISSION_LIMITS.maxConnections))
    .option('--max-preauth-per-ip <n>', 'connections from one IP address that have not said hello yet (0: no cap)', String(DEFAULT_ADMISSION_LIMITS.maxPreAuthPerIp))
    .option('--hello-timeout <ms>', 'close connections that send no valid hello within this long (0: never)', String(DEFAULT_ADMISSION_LIMITS.helloTimeoutMs))
    .option('--data-root <dir>', 'a directory whose data clients may name in make kwargs (model_dir, dataset_dir, scene_dir); repeatable; without it only the bundled assets', (dir: string, dirs: string[]) => [...dirs, dir], [] as string[])
    .option('--mcp-max-sessions <n>', 'MCP sessions open at once at most; when full, the least recently used idle session of the caller holding the most gives way', String(MCP_DEFAULTS.maxSessions))
    .option('--mcp-max-sessions-per-caller <n>', "MCP sessions one remote address holds at most; its next one ends its own least recently used idle session", String(MCP_DEFAULTS.maxSessionsPerCaller))
    .option('--mcp-max-body-bytes <n>', 'largest /mcp request body read (bytes); larger ones get 413 unread', String(MCP_DEFAULTS.maxBodyBytes))
    .action(async (opts: ServeOptions) => {
      if (opts.transport !== 'ws' && opts.transport !== 'uws') throw new Error(`--transport must be ws or uws, got ${opts.transport}`);
      for (const [flag, value] of Object.entries({ '--port': opts.port, '--idle-timeout': opts.idleTimeout, '--max-sessions': opts.maxSessions, '--max-sessions-per-client': opts.maxSessionsPerClient, '--max-frame-bytes': opts.maxFrameBytes, '--resume-grace': opts.resumeGrace, '--max-connections': opts.maxConnections, '--max-preauth-per-ip': opts.maxPreauthPerIp, '--hello-timeout': opts.helloTimeout, '--mcp-max-sessions': opts.mcpMaxSessions, '--mcp-max-sessions-per-caller': opts.mcpMaxSessionsPerCaller, '--mcp-max-body-bytes': opts.mcpMaxBodyBytes, '--drain-timeout': opts.drainTimeout })) {
        if (!/^\d+$/.test(value)) throw new Error(`${flag} must be a non-negative integer, got ${JSON.stringify(value)}`);
      }
      const busyPollUs = parseBusyPoll(opts.busyPollUs);
      const token = resolveToken(opts, process.env);
      const allowedOrigins = [...(opts.allowOrigin ?? []), ...(opts.mcpAllowOrigin ?? [])];
      const logger = stderrLogger(opts.logLevel);
      const server = await startServer({
        host: opts.host,
        port: Number(opts.port),
        transport: opts.transport,
        token,
        logger,
        checkEnvs: opts.check ?? false,
        dataRoots: opts.dataRoot,
        busyPollUs,
        limits: {
          idle_timeout_ms: Number(opts.idleTimeout),
          max_sessions: Number(opts.maxSessions),
          max_sessions_per_client: Number(opts.maxSessionsPerClient),
          max_frame_bytes: Number(opts.maxFrameBytes),
          resume_grace_ms: Number(opts.resumeGrace),
        },
        admission: { maxConnections: Number(opts.maxConnections), maxPreAuthPerIp: Number(opts.maxPreauthPerIp), helloTimeoutMs: Number(opts.helloTimeout) },
        origins: { allowedOrigins, allowedHosts: opts.allowHost ?? [] },
        // MCP (and the viewer) need HTTP routes, which the ws transport serves.
        mountRoutes: (routes, core) => {
          void mountMcp(routes, core, {
            logger,
            allowedOrigins,
            maxSessions: Number(opts.mcpMaxSessions),
            maxSessionsPerCaller: Number(opts.mcpMaxSessionsPerCaller),
            maxBodyBytes: Number(opts.mcpMaxBodyBytes),
          });
          mountViewer(routes, core);
        },
      });
      process.stdout.write(`gymwire serving ${server.core.registry.ids().length} envs on ${server.url} (transport ${opts.transport})\n`);
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) process.exit(1);
        stopping = true;
        logger.info({ signal }, 'shutting down: answering in-flight requests');
        void server.close(Number(opts.drainTimeout)).then(() => process.exit(0));
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    });
}
