/**
 * The /mcp front door under the probes of issue 23: bodies are read only after the token check and
 * never past the bound, and one caller filling its env session cap locks out nobody else.
 */
import { request } from 'node:http';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';

import { MAX_FRAME_DEPTH } from '../../protocol/frame-scan.ts';
import { callErr, callOk, httpClient, startMcpServer } from './helpers.ts';
import type { McpTestServer } from './helpers.ts';
import { INITIALIZE, jsonRpcAnswer, rawPost } from './raw-http.ts';

const MiB = 1024 * 1024;
const CARTPOLE = 'gymwire/CartPole-v1';
/** Another caller on the same machine: Linux routes all of 127/8 to loopback. */
const OTHER_CALLER = '127.0.0.2';

let t: McpTestServer | null = null;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((c) => c.close()));
  await t?.server.close();
  t = null;
});

async function client(token?: string): Promise<Client> {
  const c = await httpClient(t!.mcpUrl, token);
  clients.push(c);
  return c;
}

describe('MCP request bodies', () => {
  it('answers a request without the token with 401 before reading its body', async () => {
    t = await startMcpServer({ token: 'sekret' });
    // 64 MiB declared and nothing sent: only an answer from the headers alone can arrive.
    for (const headers of [{ 'content-length': String(64 * MiB) }, { 'content-length': String(64 * MiB), authorization: 'Bearer wrong' }] as Record<
      string,
      string
    >[]) {
      const answer = await rawPost(t.mcpUrl, { headers, withholdBody: true });
      expect(answer.status).toBe(401);
      expect(answer.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: -32001, message: expect.stringMatching(/^Unauthorized: /) } });
    }
    // A session id does not get past the token either.
    const withSession = await rawPost(t.mcpUrl, { headers: { 'mcp-session-id': 'made-up', 'content-length': String(64 * MiB) }, withholdBody: true });
    expect(withSession.status).toBe(401);
    expect(t.server.core.connectionCount).toBe(0);
  });

  it('answers a declared length past the bound with 413 before reading the body', async () => {
    t = await startMcpServer({ token: 'sekret', mcp: { maxBodyBytes: MiB } });
    const answer = await rawPost(t.mcpUrl, { headers: { authorization: 'Bearer sekret', 'content-length': String(MiB + 1) }, withholdBody: true });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      error: { message: `Payload Too Large: the request body must not exceed ${MiB} bytes (gymwire serve --mcp-max-body-bytes)` },
    });
    expect(t.endpoint.sessionCount).toBe(0);
  });

  it('stops reading a chunked body once it passes the bound, from a new caller and from one holding sessions', async () => {
    t = await startMcpServer({ mcp: { maxBodyBytes: MiB } });
    const fresh = await rawPost(t.mcpUrl, { bodyBytes: 32 * MiB });
    expect(fresh.status).toBe(413);
    expect(fresh.sent).toBeLessThan(32 * MiB);
    const c = await client();
    const id = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    const again = await rawPost(t.mcpUrl, { bodyBytes: 32 * MiB, headers: { 'mcp-protocol-version': '2025-11-25' } });
    expect(again.status).toBe(413);
    // The caller's sessions are unharmed, and bodies under the bound are served as before.
    expect(await callOk(c, 'reset', { session_id: id, seed: 0 })).toMatchObject({ session_id: id });
    expect(await rawPost(t.mcpUrl, { json: INITIALIZE }).then((a) => a.status)).toBe(200);
  });

  it('lets go of a request whose client leaves mid-body', async () => {
    t = await startMcpServer();
    const gone = request(t.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } });
    gone.on('error', () => {});
    gone.write('{"jsonrpc": "2.0", "id": 1, "method": "initia');
    await new Promise((r) => setTimeout(r, 100));
    gone.destroy();
    expect(await rawPost(t.mcpUrl, { json: INITIALIZE }).then((a) => a.status)).toBe(200);
    expect(t.endpoint.callerCount).toBe(1);
  });

  it('answers a body that is not JSON with a JSON-RPC parse error', async () => {
    t = await startMcpServer();
    const answer = await rawPost(t.mcpUrl, { bodyBytes: 1000 });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: -32700 } });
  });

  it('refuses JSON nested past the protocol depth limit with a JSON-RPC error, in the envelope or in make_env kwargs', async () => {
    t = await startMcpServer();
    const c = await client();
    const id = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    // A 10 KB body 5,000 deep, and make_env kwargs 2,000 deep: refused before anything recursive reads them.
    const deepBody = await rawPost(t.mcpUrl, { text: '['.repeat(5000) + ']'.repeat(5000) });
    const kwargs = '{"a":'.repeat(2000) + '1' + '}'.repeat(2000);
    const deepKwargs = await rawPost(t.mcpUrl, {
      headers: { 'mcp-protocol-version': '2025-11-25' },
      text: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"make_env","arguments":{"env_id":"${CARTPOLE}","kwargs":${kwargs}}}}`,
    });
    for (const answer of [deepBody, deepKwargs]) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({
        error: { code: -32600, message: `Invalid Request: the body nests arrays and objects deeper than ${MAX_FRAME_DEPTH} levels` },
      });
    }
    // Kwargs within the limit get the env's own typed answer; the caller's session is unharmed.
    let shallow: unknown = 1;
    for (let i = 0; i < 100; i++) shallow = { a: shallow };
    expect(await callErr(c, 'make_env', { env_id: CARTPOLE, kwargs: { x: shallow } })).toMatch(/^ENV_ERR_INVALID_KWARGS: /);
    expect(await callOk(c, 'reset', { session_id: id, seed: 0 })).toMatchObject({ session_id: id });
  });
});

/** make_env from `localAddress` through a bare stateless 2025-11-25 POST; resolves with the tool result. */
async function rawMake(
  url: string,
  localAddress?: string,
): Promise<{ isError?: boolean; structuredContent?: { session_id: string }; content: { text: string }[] }> {
  const answer = await rawPost(url, {
    localAddress,
    headers: { 'mcp-protocol-version': '2025-11-25' },
    json: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'make_env', arguments: { env_id: CARTPOLE } } },
  });
  expect(answer.status).toBe(200);
  return (jsonRpcAnswer(answer.body) as { result: never }).result;
}

describe('MCP env session caps', () => {
  it('makes a caller past its cap give up its own least recently used idle session, locking out nobody else', async () => {
    t = await startMcpServer({ mcp: { maxSessionsPerCaller: 3 } });
    const made: string[] = [];
    for (let i = 0; i < 10; i++) made.push((await rawMake(t.mcpUrl, OTHER_CALLER)).structuredContent!.session_id);
    expect(t.endpoint.sessionCount).toBe(3);
    expect(t.server.core.sessionCount).toBe(3);
    // Another caller is not affected by the first one's sessions, and cannot reach them.
    const c = await client();
    expect(await callErr(c, 'reset', { session_id: made.at(-1)! })).toMatch(/^ENV_ERR_UNKNOWN_SESSION: /);
    const id = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await callOk(c, 'reset', { session_id: id, seed: 1 });
    expect(await callOk(c, 'step', { session_id: id, action: 0 })).toMatchObject({ reward: 1 });
    expect(t.endpoint.sessionCount).toBe(4);
    expect(t.endpoint.callerCount).toBe(2);
  });

  it('says why an evicted session is gone', async () => {
    t = await startMcpServer({ mcp: { maxSessionsPerCaller: 1 } });
    const c = await client();
    const first = (await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string;
    await callOk(c, 'make_env', { env_id: CARTPOLE });
    await expect.poll(() => t!.server.core.sessionCount).toBe(1);
    expect(await callErr(c, 'reset', { session_id: first })).toMatch(
      /^ENV_ERR_UNKNOWN_SESSION: session .* is closed \(evicted: its caller made another one past the per-caller cap\)/,
    );
  });

  it('holds the cap against concurrent makes from one caller', async () => {
    t = await startMcpServer({ mcp: { maxSessionsPerCaller: 3 } });
    const answers = await Promise.all(Array.from({ length: 20 }, () => rawMake(t!.mcpUrl, OTHER_CALLER)));
    for (const a of answers) if (a.isError) expect(a.content[0]!.text).toMatch(/^ENV_ERR_TOO_MANY_SESSIONS: too many env sessions from this caller/);
    expect(answers.filter((a) => !a.isError).length).toBeGreaterThanOrEqual(3);
    await expect.poll(() => t!.server.core.sessionCount).toBeLessThanOrEqual(3);
    expect(t.endpoint.sessionCount).toBeLessThanOrEqual(3);
    expect(t.server.core.connectionCount).toBe(1);
  });

  it('keeps the global cap by taking an idle session from the caller holding the most', async () => {
    t = await startMcpServer({ mcp: { maxSessions: 4, maxSessionsPerCaller: 3 } });
    const heavy: string[] = [];
    for (let i = 0; i < 3; i++) heavy.push((await rawMake(t.mcpUrl, OTHER_CALLER)).structuredContent!.session_id);
    const c = await client();
    const light = [(await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string];
    light.push((await callOk(c, 'make_env', { env_id: CARTPOLE })).session_id as string);
    expect(t.endpoint.sessionCount).toBe(4);
    await expect.poll(() => t!.server.core.sessionCount).toBe(4);
    // The heavy caller's least recently used session gave way; the light caller's first one did not.
    for (const id of light) expect(await callOk(c, 'reset', { session_id: id, seed: 0 })).toMatchObject({ session_id: id });
  });
});
