/**
 * `gymwire mcp --url ws://HOST:PORT [--token T]`: an MCP server on stdio bridged to a remote
 * gymwire server, for desktop agent hosts (Claude Desktop, IDEs) that launch MCP servers as
 * processes. It speaks both revisions (2025-11-25 `initialize`, 2026-07-28 `server/discover`)
 * through the SDK's `serveStdio`. Stdout carries MCP only; logs go to stderr.
 */
import type { Server } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import pino from 'pino';

import { GymwireClient } from '../../client/ts/client.ts';
import { depthGuardedLines, GymwireMcp, MCP_DEFAULTS } from '../../server/mcp/index.ts';
import { stderrLogger } from './logger.ts';

export interface McpCommandOptions {
  url: string;
  token?: string;
  logLevel: string;
}

/** Runs the bridge until stdin closes; resolves after the gymwire sessions it made are closed. */
export async function runMcpBridge(opts: {
  url: string;
  token?: string;
  logger?: pino.Logger;
  stdin?: Readable;
  stdout?: Writable;
  /** Called once the gymwire server answered and MCP is served on stdio. */
  onReady?: () => void;
}): Promise<void> {
  const log = opts.logger ?? pino({ level: 'silent' });
  let mcp: GymwireMcp | null = null;
  const client = await GymwireClient.connect(opts.url, {
    token: opts.token,
    clientName: 'gymwire-mcp-stdio',
    onEvent: (event) => {
      if (event.type === 'event') mcp?.handleEvent(event);
      else log.info({ event }, 'gymwire connection');
    },
  });
  // serveStdio asks for a server per connection (and one for a server/discover probe it may drop).
  const servers = new Set<Server>();
  mcp = new GymwireMcp(client, {
    logger: log,
    onToolsAdded: () => {
      for (const server of servers) server.sendToolListChanged().catch((err: unknown) => log.debug({ err }, 'tools/list_changed not sent'));
    },
  });
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const closed = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
  });
  const handle = serveStdio(
    () => {
      const server = mcp.createServer();
      servers.add(server);
      server.onclose = () => servers.delete(server);
      return server;
    },
    // Messages too deep for the SDK's recursive checks (or too long) are refused before it reads them, as /mcp refuses such bodies.
    {
      transport: new StdioServerTransport(depthGuardedLines(stdin, stdout, MCP_DEFAULTS.maxBodyBytes), stdout),
      onerror: (err) => log.debug({ err }, 'MCP stdio error'),
    },
  );
  log.info({ url: opts.url }, 'gymwire MCP bridge on stdio');
  opts.onReady?.();
  await closed;
  await handle.close();
  await mcp.closeSessions('the MCP client went away');
  await client.close();
}

export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description('run an MCP server on stdio that bridges to a gymwire server (for desktop agent hosts)')
    .requiredOption('--url <url>', 'the gymwire server, e.g. ws://127.0.0.1:8765')
    .option('--token <token>', 'auth token of the gymwire server (also GYMWIRE_TOKEN)')
    .option('--log-level <level>', 'pino log level (logs go to stderr)', 'warn')
    .action(async (opts: McpCommandOptions) => {
      const logger = stderrLogger(opts.logLevel);
      // A person starting the bridge by hand sees it come up on stderr (stdout carries MCP only).
      process.stderr.write(`gymwire mcp: connecting to ${opts.url} ...\n`);
      try {
        await runMcpBridge({
          url: opts.url,
          token: opts.token ?? process.env.GYMWIRE_TOKEN,
          logger,
          onReady: () => process.stderr.write('gymwire mcp: connected; serving MCP on stdio until stdin closes\n'),
        });
      } catch (err) {
        process.stderr.write(`gymwire mcp: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      }
      process.exit(0);
    });
}
