/**
 * Points where the server keeps docs/PROTOCOL.md to the letter: a Discrete action sent as a msgpack
 * float is refused as Gymnasium's Discrete refuses floats, in step and step_batch alike, and envs
 * that truncate by themselves (Bench2Drive's tick budget, EVAC's episode length) report
 * `max_episode_steps` in the make answer.
 */
import { describe, expect, it } from 'vitest';

import { connect } from '../../client/ts/client.ts';
import { encode } from '../../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { RawConnection } from '../../conformance/suite.ts';
import { startTestServer } from '../helpers/servers.ts';

/** `fields` plus one more entry `key` whose value is `value` as written (raw msgpack bytes). */
function withRawEntry(fields: Record<string, unknown>, key: string, value: Buffer): Buffer {
  const head = Buffer.from(encode(fields));
  // A fixmap of fewer than 15 entries: one more entry is one more in the header's low nibble.
  head[0]! += 1;
  return Buffer.concat([head, Buffer.from(encode(key)), value]);
}

const float64 = (v: number) => {
  const b = Buffer.alloc(9);
  b[0] = 0xcb;
  b.writeDoubleBE(v, 1);
  return b;
};
const float32 = (v: number) => {
  const b = Buffer.alloc(5);
  b[0] = 0xca;
  b.writeFloatBE(v, 1);
  return b;
};

describe('Discrete actions sent as msgpack floats', () => {
  it('are refused with ENV_ERR_INVALID_ACTION in step and step_batch; integers are accepted', async () => {
    const srv = await startTestServer('ws');
    const raw = new RawConnection(await srv.connector());
    try {
      raw.send({ id: 0, type: 'hello', protocol_version: PROTOCOL_VERSION, client_name: 'floats' });
      expect((await raw.next()).type).toBe('result');
      const ids: string[] = [];
      for (const id of [1, 3]) {
        raw.send({ id, type: 'make', env_id: 'gymwire/CartPole-v1', kwargs: {} });
        const made = await raw.next();
        expect(made, JSON.stringify(made)).toMatchObject({ id, type: 'result' });
        ids.push((made.result as { session_id: string }).session_id);
        raw.send({ id: id + 1, type: 'reset', session_id: ids.at(-1), seed: 0 });
        expect((await raw.next()).type).toBe('result');
      }
      for (const [n, bytes] of [
        [20, float64(1)],
        [21, float32(0)],
      ] as const) {
        raw.sendBytes(withRawEntry({ id: n, type: 'step', session_id: ids[0] }, 'action', bytes));
        const answer = await raw.next();
        expect(answer).toMatchObject({ id: n, type: 'error', error: { code: 'ENV_ERR_INVALID_ACTION' } });
        expect((answer.error as { message: string }).message).toContain('float');
      }
      // A batch with one float among integers: refused whole (nothing steps).
      const actions = Buffer.concat([Buffer.from([0x92, 0x01]), float64(0)]);
      raw.sendBytes(withRawEntry({ id: 30, type: 'step_batch', session_ids: ids }, 'actions', actions));
      expect(await raw.next()).toMatchObject({ id: 30, type: 'error', error: { code: 'ENV_ERR_INVALID_ACTION', details: { index: 1 } } });
      raw.send({ id: 31, type: 'step', session_id: ids[0], action: 1 });
      expect(await raw.next()).toMatchObject({ id: 31, type: 'result' });
      raw.send({ id: 32, type: 'step_batch', session_ids: ids, actions: [0, 1] });
      expect(await raw.next()).toMatchObject({ id: 32, type: 'result' });
    } finally {
      raw.close();
      await srv.close();
    }
  });
});

describe('max_episode_steps', () => {
  it('is reported for envs that truncate by themselves: Bench2Drive (one tick per step) and EVAC (chunks of frames)', async () => {
    const srv = await startTestServer('ws');
    const c = await connect(srv.connector);
    try {
      const b2d = await c.make('gymwire/Bench2Drive-v0', { route: 'HighwayCutIn_0' });
      expect(b2d.maxEpisodeSteps).toBe(b2d.metadata['max_ticks']);
      const evac = await c.make('gymwire/EvacWorldModel-v0', { max_episode_steps: 20 });
      const chunk = (evac.actionSpace as { shape: number[] }).shape[0]!;
      expect(evac.maxEpisodeSteps).toBe(Math.ceil(20 / chunk));
      await evac.reset({ seed: 0 });
      const dim = (evac.actionSpace as { shape: number[] }).shape[1]!;
      const zeros = new Array<number>(chunk * dim).fill(0);
      let steps = 0;
      let done = false;
      while (!done) {
        const r = await evac.step(Tensor.from('float32', [chunk, dim], zeros));
        steps++;
        done = r.terminated || r.truncated;
        if (r.truncated) expect(steps).toBe(evac.maxEpisodeSteps);
      }
    } finally {
      await c.close();
      await srv.close();
    }
  }, 120_000);
});
