/**
 * gymwire over the Model Context Protocol: every env reachable as tools from any MCP client.
 *
 * @example
 * import { mountMcp } from './server/mcp/index.ts';
 * const server = await startServer({ port: 0, mountRoutes: (routes, core) => mountMcp(routes, core) });
 */
export { depthGuardedLines } from './body.ts';
export { MCP_DEFAULTS, mountMcp } from './http.ts';
export type { McpEndpoint, McpHttpOptions } from './http.ts';
export { coreLink } from './link.ts';
export type { CoreLink, GymwireLink } from './link.ts';
export { CallerOwners } from './owners.ts';
export type { CallerOwnersOptions, Owner } from './owners.ts';
export { ClosedSessionLog, GymwireMcp, TOOL_INPUTS } from './tools.ts';
export type { ClosedSessions, FixedToolName, GymwireMcpOptions, SessionHooks, SessionView } from './tools.ts';
export { actionJsonSchema, fromJson, toJson } from './values.ts';
