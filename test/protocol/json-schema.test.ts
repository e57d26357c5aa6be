/**
 * The generated JSON Schemas check real frames: every answer a live server sends validates against
 * its response.<type>.json, and requests the server refuses are refused by the schemas too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';

import { decode, encode } from '../../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { startServer } from '../../server/index.ts';
import type { RunningServer } from '../../server/index.ts';

const dir = join(import.meta.dirname, '..', '..', 'docs', 'schemas');
const ajv = new Ajv2020({ strict: false, allErrors: true });
// The msgpack-only annotations become checks: a Tensor value must be a decoded tensor, bin bytes a Uint8Array.
ajv.addKeyword({ keyword: 'x-msgpack-ext', validate: (_ext: number, value: unknown) => value instanceof Tensor });
ajv.addKeyword({ keyword: 'x-msgpack', validate: (_kind: string, value: unknown) => value instanceof Uint8Array });
ajv.addKeyword({ keyword: 'x-dtype-codes' });
const validators = new Map<string, ValidateFunction>();
const schema = (name: string): ValidateFunction => {
  let v = validators.get(name);
  if (!v) validators.set(name, (v = ajv.compile(JSON.parse(readFileSync(join(dir, name), 'utf8')) as object)));
  return v;
};
const expectValid = (name: string, message: unknown): void => {
  const validate = schema(name);
  expect(validate(message), `${name}: ${ajv.errorsText(validate.errors)}`).toBe(true);
};

let server: RunningServer;
let ws: WebSocket;
let nextId = 0;
const answers = new Map<number, (m: Record<string, unknown>) => void>();

async function call(type: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const id = nextId++;
  const request = { id, type, ...fields };
  const answer = new Promise<Record<string, unknown>>((resolve) => answers.set(id, resolve));
  ws.send(encode(request));
  return answer;
}

beforeAll(async () => {
  server = await startServer({ port: 0, transport: 'ws' });
  ws = new WebSocket(server.url);
  ws.on('message', (data: Buffer) => {
    const m = decode(new Uint8Array(data)) as Record<string, unknown>;
    if (typeof m.id === 'number') answers.get(m.id)?.(m);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
});
afterAll(async () => {
  ws.close();
  await server.close(2000);
});

describe('docs/schemas against live frames', () => {
  it('every answer of a CartPole episode validates against its response schema', async () => {
    const requests: [string, Record<string, unknown>][] = [
      ['hello', { protocol_version: PROTOCOL_VERSION, client_name: 'schema-test' }],
      ['list_envs', {}],
    ];
    for (const [type, fields] of requests) expectValid(`response.${type}.json`, await call(type, fields));
    const made = await call('make', { env_id: 'gymwire/CartPole-v1', kwargs: { render_mode: 'rgb_array' } });
    expectValid('response.make.json', made);
    const session_id = (made.result as { session_id: string }).session_id;
    expectValid('response.reset.json', await call('reset', { session_id, seed: 7 }));
    expectValid('response.step.json', await call('step', { session_id, action: 1 }));
    expectValid('response.reset_batch.json', await call('reset_batch', { session_ids: [session_id], seeds: [1] }));
    expectValid('response.step_batch.json', await call('step_batch', { session_ids: [session_id], actions: [0] }));
    expectValid('response.render.json', await call('render', { session_id, format: 'png' }));
    expectValid('response.list_tools.json', await call('list_tools', { session_id }));
    expectValid('response.ping.json', await call('ping', { payload: { x: 1 } }));
    expectValid('response.close.json', await call('close', { session_id }));
  });

  it('errors validate against response.error.json and carry the request id', async () => {
    const answer = await call('step', { session_id: 's_missing', action: 0 });
    expectValid('response.error.json', answer);
    expect(answer.type).toBe('error');
  });

  it('seeds past 2^53 - 1 are refused by the schema and by the server alike', async () => {
    const made = await call('make', { env_id: 'gymwire/CartPole-v1' });
    const session_id = (made.result as { session_id: string }).session_id;
    const request = { id: nextId, type: 'reset', session_id, seed: 2n ** 60n };
    expect(schema('request.reset.json')({ ...request, seed: 2 ** 60 })).toBe(false);
    const answer = await call('reset', { session_id, seed: 2n ** 60n });
    expect(answer.type).toBe('error');
    expect((answer.error as { code: string; message: string }).message).toMatch(/2\^53/);
    expectValid('request.reset.json', { ...request, seed: 2 ** 53 - 1 });
  });
});
