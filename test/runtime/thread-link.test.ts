import { Worker } from 'node:worker_threads';

import { afterEach, describe, expect, it } from 'vitest';

import { ThreadLink } from '../../runtime/thread-link.ts';

/** A real worker thread that answers `echo`, never answers `hang`, exits on `exit`, sends garbage on `garbage`. */
const PEER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (m) => {
  if (m.op === 'echo') parentPort.postMessage({ id: m.id, value: m.value });
  if (m.op === 'garbage') { parentPort.postMessage('nonsense'); parentPort.postMessage({ id: m.id, value: 'after garbage' }); }
  if (m.op === 'exit') process.exit(3);
});`;

const links: ThreadLink<{ op: string; value?: unknown }>[] = [];
afterEach(async () => {
  for (const link of links.splice(0)) await link.close('test over');
});

function link(deadlineMs = 5_000) {
  let started = 0;
  const lost: string[] = [];
  const l = new ThreadLink<{ op: string; value?: unknown }>({
    name: 'the test thread',
    start: () => {
      started++;
      return new Worker(PEER, { eval: true });
    },
    send: (worker, id, body) => worker.postMessage({ ...body, id }),
    read: (m) => {
      const msg = m as { id?: unknown; value?: unknown };
      return typeof msg === 'object' && msg !== null && typeof msg.id === 'number' ? { id: msg.id, outcome: { ok: true, value: msg.value } } : 'garbage';
    },
    deadlineMs,
    onLost: (reason) => lost.push(reason),
  });
  links.push(l);
  return { l, lost, started: () => started };
}

describe('ThreadLink', () => {
  it('starts the thread with the first request and answers by id', async () => {
    const { l, started } = link();
    expect(l.started).toBe(false);
    expect(await Promise.all([l.request({ op: 'echo', value: 1 }, { what: 'echo' }), l.request({ op: 'echo', value: 2 }, { what: 'echo' })])).toEqual([1, 2]);
    expect(started()).toBe(1);
    expect(await l.request({ op: 'garbage' }, { what: 'garbage' })).toBe('after garbage');
  });

  it('ends a hung thread at the deadline, fails what waited, and starts a fresh one for the next request', async () => {
    const { l, lost, started } = link(200);
    // Booted first (a thread's start can outlast 200 ms on a loaded machine), so only the hang meets the deadline.
    expect(await l.request({ op: 'echo', value: 0 }, { what: 'echo', deadlineMs: 30_000 })).toBe(0);
    const hung = l.request({ op: 'hang' }, { what: 'hang' });
    await expect(hung).rejects.toMatchObject({ code: 'ENV_ERR_ENV_FAILURE', details: { timed_out: true } });
    await expect.poll(() => l.generation).toBe(1);
    expect(lost[0]).toMatch(/a hang call got no answer within its deadline/);
    expect(await l.request({ op: 'echo', value: 'again' }, { what: 'echo', deadlineMs: 30_000 })).toBe('again');
    expect(started()).toBe(2);
  });

  it('fails what waits when the thread exits, naming the exit code', async () => {
    const { l } = link();
    const waiting = l.request({ op: 'hang' }, { what: 'hang' });
    await expect(l.request({ op: 'exit' }, { what: 'exit' })).rejects.toThrow(/the test thread exited with code 3/);
    await expect(waiting).rejects.toThrow(/exited with code 3/);
    expect(l.generation).toBe(1);
  });

  it('refuses requests once closed', async () => {
    const { l } = link();
    await l.request({ op: 'echo', value: 1 }, { what: 'echo' });
    await l.close('closed by the test');
    await expect(l.request({ op: 'echo' }, { what: 'echo' })).rejects.toThrow(/the test thread is closed/);
  });
});
