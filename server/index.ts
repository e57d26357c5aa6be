/**
 * Starting a server: the session core behind one transport, on one port.
 *
 * @example
 * const server = await startServer({ port: 0 });
 * console.log(server.url); // ws://127.0.0.1:41234
 * await server.close();
 */
import type { Logger } from 'pino';

import { DataRoots } from '../envs/core/data-roots.ts';
import type { Registry } from '../envs/core/registry.ts';
import { defaultRegistry } from '../envs/index.ts';
import type { BusyPollSetting } from '../runtime/busy-poll.ts';
import type { Limits } from '../protocol/messages.ts';
import type { AdmissionLimits } from './admission.ts';
import { ServerCore } from './core.ts';
import type { HttpRoutes } from './http.ts';
import { baseRoutes } from './http.ts';
import type { OriginPolicyOptions } from './origin.ts';
import type { ServerTransport } from './transport.ts';
import { MemoryTransport } from './transports/memory.ts';
import type { FramePoolOptions } from './frame-pool.ts';
import type { OutboundLimits } from './outbound.ts';
import { UwsTransport } from './transports/uws.ts';
import { WsTransport } from './transports/ws.ts';

export type TransportName = 'ws' | 'uws' | 'memory';

export interface ServerOptions {
  host?: string;
  /** 0 picks a free port. Default 8765. */
  port?: number;
  transport?: TransportName;
  registry?: Registry;
  /**
   * Directories that path kwargs (EVAC's model_dir and dataset_dir, NAVSIM's scene_dir) may point
   * into, besides each env family's bundled assets; for the registry built here (not `registry`).
   */
  dataRoots?: readonly string[];
  logger?: Logger;
  token?: string | null;
  limits?: Partial<Limits>;
  checkEnvs?: boolean;
  /** Adds HTTP routes (MCP, the viewer) to the ws transport's server. */
  mountRoutes?: (routes: HttpRoutes, core: ServerCore) => void;
  reapIntervalMs?: number;
  /**
   * Polling the sockets after each answer instead of sleeping (runtime/busy-poll.ts): 'auto'
   * (default: an adaptive window, off for clients whose next request comes late), 0 (off) or a
   * fixed window in µs. The memory transport's default is 0 (client and server share the thread).
   */
  busyPollUs?: BusyPollSetting;
  /** Connection caps and the hello deadline (server/admission.ts). */
  admission?: Partial<AdmissionLimits>;
  /** Browser origins and Host names served besides loopback ones (server/origin.ts; docs/security.md). */
  origins?: OriginPolicyOptions;
  /** See ServerCoreOptions.maxDepartedReplyBytes. */
  maxDepartedReplyBytes?: number;
  /** See ServerCoreOptions.framePool. */
  framePool?: FramePoolOptions;
  /** See ServerCoreOptions.envCallTimeoutMs (default 5 min). */
  envCallTimeoutMs?: number;
  /** See ServerCoreOptions.closeWaitMs (default 5 s). */
  closeWaitMs?: number;
  /** See ServerCoreOptions.outbound. */
  outbound?: Partial<OutboundLimits>;
}

export interface RunningServer {
  readonly core: ServerCore;
  readonly transport: ServerTransport;
  readonly host: string;
  readonly port: number;
  /** ws://host:port (empty for the memory transport). */
  readonly url: string;
  /**
   * Graceful: stops accepting, answers in-flight requests and lets every client read its answers,
   * the `shutdown` event and a 1001 close, all within `timeoutMs` (default 10 s; connections still
   * open then are dropped); then closes sessions and the transport.
   */
  close(timeoutMs?: number): Promise<void>;
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const host = opts.host ?? '127.0.0.1';
  // A registry we build is ours to close (it may hold model runtimes); one passed in is the caller's.
  const ownRegistry = opts.registry ? null : defaultRegistry({ dataRoots: new DataRoots(opts.dataRoots), logger: opts.logger });
  const core = new ServerCore({
    registry: opts.registry ?? ownRegistry!,
    logger: opts.logger,
    token: opts.token,
    limits: opts.limits,
    checkEnvs: opts.checkEnvs,
    reapIntervalMs: opts.reapIntervalMs,
    busyPollUs: opts.busyPollUs ?? (opts.transport === 'memory' ? 0 : 'auto'),
    admission: opts.admission,
    origins: opts.origins,
    maxDepartedReplyBytes: opts.maxDepartedReplyBytes,
    framePool: opts.framePool,
    envCallTimeoutMs: opts.envCallTimeoutMs,
    closeWaitMs: opts.closeWaitMs,
    outbound: opts.outbound,
  });
  const name = opts.transport ?? 'ws';
  let transport: ServerTransport;
  if (name === 'ws') {
    const routes = baseRoutes(core);
    opts.mountRoutes?.(routes, core);
    transport = new WsTransport(routes);
  } else if (name === 'uws') transport = new UwsTransport();
  else transport = new MemoryTransport();
  const { port } = await transport.listen(core, { host, port: opts.port ?? 8765 });
  const url = name === 'memory' ? '' : `ws://${host.includes(':') ? `[${host}]` : host}:${port}`;
  core.log.info({ url, transport: name, envs: core.registry.ids().length }, 'gymwire listening');
  let closing: Promise<void> | null = null;
  return {
    core,
    transport,
    host,
    port,
    url,
    close(timeoutMs?: number) {
      closing ??= (async () => {
        transport.stopAccepting?.();
        await core.shutdown(timeoutMs);
        await transport.close();
        await ownRegistry?.close();
      })();
      return closing;
    },
  };
}

export { ServerCore } from './core.ts';
export { HttpRoutes } from './http.ts';
export { MemoryTransport } from './transports/memory.ts';
export { UwsTransport } from './transports/uws.ts';
export { WsTransport } from './transports/ws.ts';
