/**
 * `gymwire mcp --url ws://HOST:PORT [--token T]`: an MCP server on stdio bridged to a remote
 * gymwire server, for desktop agent hosts (Claude Desktop, IDEs) that launch MCP servers as
 * processes. Stdout carries MCP only; logs go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from 'commander';
import pino from 'pino';

import { GymwireClient } from '../../client/ts/client.ts';
import { GymwireMcp } from '../../server/mcp/index.ts';
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
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
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
  mcp = new GymwireMcp(client, { logger: log });
  const transport = new StdioServerTransport(opts.stdin as never, opts.stdout as never);
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    (opts.stdin ?? process.stdin).once('end', resolve);
  });
  await mcp.server.connect(transport);
  log.info({ url: opts.url }, 'gymwire MCP bridge on stdio');
  await closed;
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
      try {
        await runMcpBridge({ url: opts.url, token: opts.token ?? process.env.GYMWIRE_TOKEN, logger });
      } catch (err) {
        process.stderr.write(`gymwire mcp: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      }
      process.exit(0);
    });
}
