/**
 * A server (or a bare echo floor) in its own process, so the client being measured gets its own
 * core. Prints one JSON line {url} on stdout when listening.
 *   tsx test/bench/server-process.ts gymwire ws|uws
 *   tsx test/bench/server-process.ts echo ws|uws
 * BENCH_BUSY_POLL_US=auto|0|50 sets the gymwire server's busy-polling (runtime/busy-poll.ts; default auto).
 */
import { WebSocketServer } from 'ws';

import { parseBusyPoll } from '../../runtime/busy-poll.ts';
import { startServer } from '../../server/index.ts';
import { loadUws } from '../../server/transports/uws.ts';
import { benchRegistry } from './bench-envs.ts';

const [kind, transport] = process.argv.slice(2) as ['gymwire' | 'echo', 'ws' | 'uws'];

async function main(): Promise<string> {
  if (kind === 'gymwire') {
    const srv = await startServer({
      port: 0,
      transport,
      registry: benchRegistry(),
      limits: { max_sessions_per_client: 4096, max_sessions: 8192, idle_timeout_ms: 0 },
      busyPollUs: parseBusyPoll(process.env.BENCH_BUSY_POLL_US ?? 'auto'),
    });
    return srv.url;
  }
  if (transport === 'ws') {
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
    // The floor echoes a reply of the size the client asks for (first 4 bytes), like a step answer would be.
    wss.on('connection', (ws) => ws.on('message', (data: Buffer) => ws.send(replyFor(data), { binary: true })));
    await new Promise((r) => wss.once('listening', r));
    return `ws://127.0.0.1:${(wss.address() as { port: number }).port}`;
  }
  const uws = await loadUws();
  const app = uws.App();
  app.ws('/*', {
    compression: uws.DISABLED,
    maxPayloadLength: 256 * 1024 * 1024,
    message: (ws, msg) => {
      ws.send(replyFor(Buffer.from(msg)), true);
    },
  });
  const port = await new Promise<number>((resolve) => app.listen('127.0.0.1', 0, (t) => resolve(uws.us_socket_local_port(t))));
  return `ws://127.0.0.1:${port}`;
}

const replies = new Map<number, Buffer>();
function replyFor(data: Buffer): Buffer {
  const size = data.byteLength >= 4 ? data.readUInt32LE(0) : data.byteLength;
  let reply = replies.get(size);
  if (!reply) replies.set(size, (reply = Buffer.alloc(size, 7)));
  return reply;
}

// Exit through process.exit so `--cpu-prof` in BENCH_NODE_FLAGS writes its profile.
process.on('SIGTERM', () => process.exit(0));
process.stdout.write(`${JSON.stringify({ url: await main() })}\n`);
