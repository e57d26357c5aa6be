import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { decode } from '../../protocol/codec.ts';
import { goldenFrames, toJsonForm } from '../helpers/golden-frames.ts';

const dir = join(import.meta.dirname, '..', 'fixtures', 'frames');
const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as Record<string, unknown>;

describe('golden frames (test/fixtures/frames, shared with the Python SDK tests)', () => {
  it('are up to date with the codec (run npm run gen:frames)', () => {
    const expected = goldenFrames();
    expect(Object.keys(index).sort()).toEqual(Object.keys(expected).sort());
    for (const [name, { frame, value }] of Object.entries(expected)) {
      expect(Buffer.from(readFileSync(join(dir, `${name}.msgpack`))).equals(Buffer.from(frame)), `${name}.msgpack is stale`).toBe(true);
      expect(index[name], name).toEqual(value);
    }
  });

  it.each(Object.keys(index))('%s decodes to its documented value', (name) => {
    const decoded = decode(new Uint8Array(readFileSync(join(dir, `${name}.msgpack`))));
    expect(toJsonForm(decoded)).toEqual(index[name]);
  });
});
