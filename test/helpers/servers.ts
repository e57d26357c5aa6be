/**
 * Test servers on every transport: one helper so each suite can run over [ws, uws, memory].
 */
import type { Registry } from '../../envs/core/registry.ts';
import type { Limits } from '../../protocol/messages.ts';
import type { Connector } from '../../client/ts/transport.ts';
import { wsConnector } from '../../client/ts/transport.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer, TransportName } from '../../server/index.ts';
import type { MemoryTransport } from '../../server/transports/memory.ts';

export const TRANSPORTS: TransportName[] = ['ws', 'uws', 'memory'];

export interface TestServer {
  server: RunningServer;
  connector: Connector;
  close(): Promise<void>;
}

export async function startTestServer(
  transport: TransportName,
  opts: { registry?: Registry; limits?: Partial<Limits>; token?: string; reapIntervalMs?: number; busyPollUs?: number } = {},
): Promise<TestServer> {
  const server = await startServer({ port: 0, transport, ...opts });
  const connector: Connector = transport === 'memory' ? async () => (server.transport as MemoryTransport).connect() : wsConnector(server.url);
  return { server, connector, close: () => server.close(2000) };
}
