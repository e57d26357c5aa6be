import { describe, expect, it } from 'vitest';

import { CallerCaps, callerOf } from '../../server/mcp/caller-caps.ts';

interface S {
  caller: string;
  busy: number;
  lastActive: number;
  name: string;
}

let clock = 0;
const session = (caller: string, name: string, busy = 0): S => ({ caller, busy, lastActive: ++clock, name });

function fill(caps: CallerCaps<S>, caller: string, n: number, busy = 0): S[] {
  return Array.from({ length: n }, (_, i) => {
    const s = session(caller, `${caller}#${i}`, busy);
    caps.add(s);
    return s;
  });
}

describe('CallerCaps', () => {
  it('#makeRoom: room without eviction under both caps', () => {
    const caps = new CallerCaps<S>({ perCaller: 2, total: 4 });
    fill(caps, 'a', 1);
    expect(caps.makeRoom('a')).toEqual({ kind: 'room', evict: [] });
    expect(caps.size).toBe(1);
  });

  it('#makeRoom: a caller at its cap gives up its own least recently used idle session', () => {
    const caps = new CallerCaps<S>({ perCaller: 3, total: 100 });
    const [oldest, middle] = fill(caps, 'a', 3);
    fill(caps, 'b', 1);
    expect(caps.makeRoom('a')).toEqual({ kind: 'room', evict: [oldest] });
    oldest!.busy = 1;
    expect(caps.makeRoom('a')).toEqual({ kind: 'room', evict: [middle] });
  });

  it('#makeRoom: refuses with 429 when every session of the caller is busy, and others still get in', () => {
    const caps = new CallerCaps<S>({ perCaller: 2, total: 100 });
    fill(caps, 'a', 2, 1);
    expect(caps.makeRoom('a')).toMatchObject({ kind: 'refused', status: 429, message: expect.stringMatching(/at most 2.*busy/) });
    expect(caps.makeRoom('b')).toEqual({ kind: 'room', evict: [] });
  });

  it('#makeRoom: when full, takes the least recently used idle session of the caller holding the most', () => {
    const caps = new CallerCaps<S>({ perCaller: 10, total: 6 });
    const light = fill(caps, 'light', 2);
    const heavy = fill(caps, 'heavy', 4);
    expect(caps.makeRoom('new')).toEqual({ kind: 'room', evict: [heavy[0]] });
    // A heavy caller whose sessions are all busy: the next heaviest with an idle one gives way.
    for (const s of heavy) s.busy = 1;
    expect(caps.makeRoom('new')).toEqual({ kind: 'room', evict: [light[0]] });
    for (const s of light) s.busy = 1;
    expect(caps.makeRoom('new')).toMatchObject({ kind: 'refused', status: 503 });
  });

  it('#makeRoom: a caller at its cap on a full endpoint frees one of its own and the global slot with it', () => {
    const caps = new CallerCaps<S>({ perCaller: 2, total: 4 });
    const a = fill(caps, 'a', 2);
    fill(caps, 'b', 2);
    expect(caps.makeRoom('a')).toEqual({ kind: 'room', evict: [a[0]] });
  });

  it('#remove keeps the counts', () => {
    const caps = new CallerCaps<S>({ perCaller: 2, total: 4 });
    const [s] = fill(caps, 'a', 1);
    caps.remove(s!);
    caps.remove(s!);
    expect(caps.size).toBe(0);
    expect(caps.held('a')).toBe(0);
  });

  it('refuses caps that are not positive integers', () => {
    expect(() => new CallerCaps<S>({ perCaller: 0, total: 4 })).toThrow(/perCaller must be a positive integer/);
  });
});

describe('callerOf', () => {
  it('folds IPv4-mapped addresses and names a missing one', () => {
    expect(callerOf('::ffff:10.0.0.7')).toBe('10.0.0.7');
    expect(callerOf('::1')).toBe('::1');
    expect(callerOf(undefined)).toBe('unknown');
  });
});
