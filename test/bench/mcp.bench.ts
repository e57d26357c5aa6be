/**
 * MCP benchmark: the latency of one CartPole `step` tool call through `gymwire serve`'s /mcp
 * (Streamable HTTP; the SDK 1.x client on 2025-11-25 and the SDK v2 client on 2026-07-28) and
 * through the `gymwire mcp` stdio bridge, each against its floor: the same SDK serving a tool that
 * does nothing over the same transport, with the same client (test/bench/mcp-floor-server.ts). The
 * gap is what gymwire adds (argument checks, the session's step, the result's JSON); the floor is
 * what MCP itself costs. Below both, a plain HTTP JSON echo with fetch: what one HTTP round trip
 * costs with no MCP at all. The gymwire WebSocket client's step is printed for scale.
 *
 * Servers and bridges run in processes of their own on core 1, this client on core 0
 * (placement.ts); gymwire and floor calls alternate in rounds so machine drift hits both alike.
 *   npx tsx test/bench/mcp.bench.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { connect } from '../../client/ts/client.ts';
import { onCore, SERVER_CORE } from './placement.ts';

const QUICK = process.argv.includes('--quick');

// The SDK's HTTP client hands one long-lived AbortSignal to every fetch and Node's fetch keeps a
// listener on it per request until garbage collection: past 1,500 calls Node warns once per call.
// Not a leak of the server's; keep the other warnings.
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name !== 'MaxListenersExceededWarning') process.stderr.write(`${w.name}: ${w.message}\n`);
});
const ROUNDS = QUICK ? 3 : 7;
const CALLS = QUICK ? 100 : 300;

function emit(metric: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ bench: 'mcp', metric, value: Number(value.toFixed(3)), unit, ...extra })}\n`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const tsx = ['--import', 'tsx'];
/**
 * bin/gymwire.js re-runs itself with a larger old generation; a child of a child would outlive a
 * kill, so the flag is passed here and the re-run switched off.
 */
const GYMWIRE_ENV = { ...process.env, GYMWIRE_NO_REEXEC: '1' };
const GYMWIRE = ['--initial-old-space-size=256', 'bin/gymwire.js'];

/** Starts `args` on the server core and resolves with the first stdout line matching `pattern`. */
async function startProcess(args: string[], pattern: RegExp): Promise<{ match: RegExpMatchArray; stop(): Promise<void> }> {
  const child = spawn(...onCore(SERVER_CORE, process.execPath, args), { stdio: ['ignore', 'pipe', 'inherit'], env: GYMWIRE_ENV });
  const exited = once(child, 'exit');
  for await (const line of createInterface({ input: child.stdout })) {
    const match = line.match(pattern);
    if (match) {
      child.stdout.resume(); // keep draining; the process logs nothing else to stdout
      return {
        match,
        stop: async () => {
          child.kill('SIGTERM');
          await exited;
        },
      };
    }
  }
  throw new Error(`${args.join(' ')} exited before printing ${pattern}`);
}

/** An MCP client on stdio to `args`, run on the server core. */
function stdioTransport(args: string[]): Transport {
  const [command, full] = onCore(SERVER_CORE, process.execPath, args);
  return new StdioClientTransport({ command, args: full, stderr: 'inherit', env: GYMWIRE_ENV as Record<string, string> });
}

async function mcpClient(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'gymwire-bench', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

/** The calls the bench makes, on either SDK's client. */
interface AnyClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

async function modernClient(url: string): Promise<AnyClient> {
  const client = new ClientV2({ name: 'gymwire-bench', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new HttpV2(new URL(url)));
  return client as unknown as AnyClient;
}

async function call(client: AnyClient, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (res.isError) throw new Error(`${name} failed: ${JSON.stringify(res.content)}`);
  return (res.structuredContent ?? {}) as Record<string, unknown>;
}

/** A CartPole session driven through MCP: `one()` is one timed step call (resets, untimed, when an episode ends). */
async function gymwireStepper(client: AnyClient): Promise<() => Promise<number>> {
  const made = await call(client, 'make_env', { env_id: 'gymwire/CartPole-v1' });
  const session = made['session_id'] as string;
  await call(client, 'reset', { session_id: session, seed: 0 });
  let i = 0;
  return async () => {
    const t0 = performance.now();
    const r = await call(client, 'step', { session_id: session, action: i++ % 2 });
    const ms = performance.now() - t0;
    if (r['terminated'] || r['truncated']) await call(client, 'reset', { session_id: session });
    return ms;
  };
}

function floorStepper(client: AnyClient): () => Promise<number> {
  return async () => {
    const t0 = performance.now();
    await call(client, 'noop', {});
    return performance.now() - t0;
  };
}

/** Alternating rounds of `CALLS` calls each; per-round medians (ms). */
async function compare(label: string, mine: () => Promise<number>, floor: () => Promise<number>): Promise<void> {
  for (let i = 0; i < CALLS; i++) {
    await mine();
    await floor();
  }
  const ours: number[] = [];
  const theirs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < CALLS; i++) a.push(await mine());
    for (let i = 0; i < CALLS; i++) b.push(await floor());
    ours.push(median(a));
    theirs.push(median(b));
  }
  const ratios = ours.map((o, i) => o / theirs[i]!);
  emit(`${label}_step_call_p50_ms`, median(ours), 'ms', {
    floor_p50_ms: Number(median(theirs).toFixed(3)),
    gymwire_added_ms: Number((median(ours) - median(theirs)).toFixed(3)),
    ratio: Number(median(ratios).toFixed(2)),
    round_ratios_min_max: [Math.min(...ratios), Math.max(...ratios)].map((x) => Number(x.toFixed(2))),
    rounds: ROUNDS,
    calls_per_round: CALLS,
  });
}

const served = await startProcess([...GYMWIRE, 'serve', '--port', '0', '--log-level', 'warn'], /on (ws:\/\/\S+)/);
const wsUrl = served.match[1]!;
const floorHttp = await startProcess([...tsx, 'test/bench/mcp-floor-server.ts', 'http'], /"url":"([^"]+)","echo":"([^"]+)"/);
const clients: AnyClient[] = [];
try {
  const mcpUrl = `${wsUrl.replace('ws://', 'http://')}/mcp`;
  // The floor under every HTTP figure: one POST of a small JSON body, echoed, with Node's fetch.
  const echoUrl = floorHttp.match[2]!;
  const echo = async () => {
    const t0 = performance.now();
    await (
      await fetch(echoUrl, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}', headers: { 'content-type': 'application/json' } })
    ).json();
    return performance.now() - t0;
  };
  const http = await mcpClient(new StreamableHTTPClientTransport(new URL(mcpUrl)));
  const httpFloor = await mcpClient(new StreamableHTTPClientTransport(new URL(floorHttp.match[1]!)));
  clients.push(http, httpFloor);
  await compare('http_2025_11_25', await gymwireStepper(http), floorStepper(httpFloor));
  await compare('http_2025_11_25_vs_echo', await gymwireStepper(http), echo);

  const modern = await modernClient(mcpUrl);
  const modernFloor = await modernClient(floorHttp.match[1]!);
  clients.push(modern, modernFloor);
  await compare('http_2026_07_28', await gymwireStepper(modern), floorStepper(modernFloor));
  await compare('http_2026_07_28_vs_echo', await gymwireStepper(modern), echo);

  const bridge = await mcpClient(stdioTransport([...GYMWIRE, 'mcp', '--url', wsUrl]));
  const stdioFloor = await mcpClient(stdioTransport([...tsx, 'test/bench/mcp-floor-server.ts', 'stdio']));
  clients.push(bridge, stdioFloor);
  await compare('stdio_bridge', await gymwireStepper(bridge), floorStepper(stdioFloor));

  // For scale: the same step from the WebSocket client.
  const ws = await connect(wsUrl);
  const env = await ws.make('gymwire/CartPole-v1');
  await env.reset({ seed: 0 });
  const times: number[] = [];
  for (let i = 0; i < CALLS * 3; i++) {
    const t0 = performance.now();
    const r = await env.step(i % 2);
    times.push(performance.now() - t0);
    if (r.terminated || r.truncated) await env.reset();
  }
  emit('websocket_step_p50_ms', median(times.slice(CALLS)), 'ms');
  await ws.close();
} finally {
  await Promise.allSettled(clients.map((c) => c.close()));
  await Promise.all([served.stop(), floorHttp.stop()]);
}
