/**
 * The batched observation forms of reset_batch and step_batch, served over a real socket and read
 * by the TypeScript client: a Dict observation arrives as a map of per-key batches (images stacked,
 * nested maps too, Discrete keys as int64, the text key an array of strings), a failed session's
 * slot holds zeros key by key, and a key whose images differ in shape falls back to the array of
 * that key's values; observations that are not a Dict's keep the array form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { unstack } from '../../client/ts/rollout/batch.ts';
import { RawConnection } from '../../conformance/harness.ts';
import { batchRow, stackBatch } from '../../protocol/batch.ts';
import * as spaces from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { testRegistry } from '../helpers/envs.ts';
import { startTestServer } from '../helpers/servers.ts';
import type { TestServer } from '../helpers/servers.ts';

const ENV = 'test/DictFrames-v0';

function tensor(v: unknown): Tensor {
  expect(v).toBeInstanceOf(Tensor);
  return v as Tensor;
}

describe('batched Dict observations', () => {
  let srv: TestServer;
  let c: GymwireClient;
  beforeAll(async () => {
    srv = await startTestServer('ws', { registry: testRegistry() });
    c = await connect(srv.connector);
  });
  afterAll(async () => {
    await c.close();
    await srv.close();
  });

  it('arrive as one map per session for a client that speaks protocol version 1, as they did before version 2', async () => {
    const raw = new RawConnection(await srv.connector());
    raw.send({ id: 0, type: 'hello', protocol_version: 1, client_name: 'v1' });
    const welcome = await raw.next();
    expect((welcome.result as { protocol_version: number }).protocol_version).toBe(1);
    const ids: string[] = [];
    for (let i = 1; i <= 2; i++) {
      raw.send({ id: i, type: 'make', env_id: ENV, ack: i - 1 });
      ids.push(((await raw.next()).result as { session_id: string }).session_id);
    }
    raw.send({ id: 3, type: 'reset_batch', session_ids: ids, seeds: [5, 6], ack: 2 });
    const reset = (await raw.next()).result as { obs: unknown };
    expect(Array.isArray(reset.obs)).toBe(true);
    const rows = reset.obs as Record<string, unknown>[];
    expect(rows.map((r) => r.task)).toEqual(['task5', 'task6']);
    expect(tensor(rows[1]!.image).shape).toEqual([8, 8, 3]);
    raw.send({ id: 4, type: 'step_batch', session_ids: ids, actions: [0, 1], ack: 3 });
    const stepped = (await raw.next()).result as { obs: unknown };
    expect(Array.isArray(stepped.obs)).toBe(true);
    raw.close();
  });

  it('arrive as one map of per-key stacks from reset_batch and step_batch, rows equal to single sessions', async () => {
    const vec = await c.makeVec(ENV, 3, { autoresetMode: 'next_step' });
    const single = await c.make(ENV);
    const { obs } = await vec.reset({ seed: 5 });
    const batch = obs as Record<string, unknown>;
    expect(Object.keys(batch).sort()).toEqual(['cameras', 'image', 'phase', 'state', 'task']);
    expect(batch.task).toEqual(['task5', 'task6', 'task7']);
    expect(tensor(batch.image).dtype).toBe('uint8');
    expect(tensor(batch.image).shape).toEqual([3, 8, 8, 3]);
    expect(tensor((batch.cameras as Record<string, unknown>).wrist).shape).toEqual([3, 8, 8, 3]);
    expect(tensor(batch.state).shape).toEqual([3, 3]);
    expect(tensor(batch.phase).dtype).toBe('int64');
    expect(tensor(batch.phase).shape).toEqual([3]);
    // Session 2 was seeded 5 + 2: its row is what a single session reset with seed 7 gives.
    const alone = await single.reset({ seed: 7 });
    expect(vec.row(obs, 2)).toEqual(alone.obs);

    const out = await vec.step([0, 2, 0]);
    const stepped = out.obs as Record<string, unknown>;
    expect(tensor(stepped.image).shape).toEqual([3, 8, 8, 3]);
    expect(tensor(stepped.phase).toNumbers()).toEqual([1, 1, 1]);
    const step = await single.step(0);
    expect(vec.row(out.obs, 2)).toEqual(step.obs);
    // The rollout engine splits the same form into per-session maps of views.
    const rows = unstack(out.obs, 3, vec.singleObservationSpace) as Record<string, unknown>[];
    expect(rows[2]).toEqual(step.obs);
    expect(tensor(rows[1]!.image).data.buffer).toBe(tensor(stepped.image).data.buffer);
    await vec.close();
    await single.close();
  });

  it('fill a failed session with zeros key by key, the others stacked as usual', async () => {
    const vec = await c.makeVec(ENV, 2, { autoresetMode: 'next_step' });
    await vec.reset({ seed: 1 });
    const r = await c.request('step_batch', { session_ids: vec.sessionIds, actions: [0, 1], autoreset_mode: 'next_step' });
    expect(r.errors[0]).toBeNull();
    expect(r.errors[1]).toMatchObject({ code: expect.any(String), message: expect.stringContaining('boom') });
    const obs = r.obs as Record<string, unknown>;
    const image = tensor(obs.image);
    expect(image.shape).toEqual([2, 8, 8, 3]);
    const per = 8 * 8 * 3;
    expect(image.data.subarray(0, per).every((v) => v === 17)).toBe(true); // seed 1, step 1
    expect(image.data.subarray(per).every((v) => v === 0)).toBe(true);
    expect(
      tensor((obs.cameras as Record<string, unknown>).wrist)
        .data.subarray(per)
        .every((v) => v === 0),
    ).toBe(true);
    expect(tensor(obs.state).toNumbers()).toEqual([1, 1, 0.5, 0, 0, 0]);
    expect(tensor(obs.phase).toNumbers()).toEqual([1, 0]);
    await vec.close();
  });

  it('fall back to an array for a key whose images differ in shape, the other keys still stacked', async () => {
    const a = await c.make(ENV, { side: 8 });
    const b = await c.make(ENV, { side: 4 });
    const ids = [a.sessionId, b.sessionId];
    const reset = await c.request('reset_batch', { session_ids: ids, seeds: [3, 4], options: null });
    const obs = reset.obs as Record<string, unknown>;
    expect(Array.isArray(obs.image)).toBe(true);
    const images = obs.image as unknown[];
    expect(tensor(images[0]).shape).toEqual([8, 8, 3]);
    expect(tensor(images[1]).shape).toEqual([4, 4, 3]);
    expect(Array.isArray((obs.cameras as Record<string, unknown>).wrist)).toBe(true);
    expect(tensor(obs.state).shape).toEqual([2, 3]);
    expect(tensor(obs.phase).toNumbers()).toEqual([0, 0]);
    const r = await c.request('step_batch', { session_ids: ids, actions: [0, 0], autoreset_mode: 'next_step' });
    const second = await c.make(ENV, { side: 4 });
    await second.reset({ seed: 4 });
    expect(b.observationSpace).toEqual(second.observationSpace);
    expect(batchRow(r.obs, 1, b.observationSpace)).toEqual((await second.step(0)).obs);
    await a.close();
    await b.close();
    await second.close();
  });

  it('keep the array form for observations that are maps but not of a Dict space (a Graph)', () => {
    const nodes = (k: number) => Tensor.from('float32', [2, 1], [k, k]);
    const graphs = [0, 1].map((k) => ({ nodes: nodes(k), edges: null, edge_links: null }));
    const graphSpace = spaces.graph(spaces.box({ low: 0, high: 1, shape: [1], dtype: 'float32' }), null);
    expect(stackBatch(graphs, graphSpace)).toBe(graphs);
    expect(stackBatch(graphs)).toBe(graphs);
  });
});
