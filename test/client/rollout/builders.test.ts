/**
 * The dataset writer's column builders produce the same values as apache-arrow's own builders:
 * across growth past their first buffers, with nulls arriving late, bits packed, strings repeated
 * and non-ASCII.
 */
import { Binary, Bool, Field, Float64, Int32, Int64, makeData, RecordBatch, Schema, Struct, tableFromIPC, tableToIPC, Table, Utf8 } from 'apache-arrow';
import type { DataType } from 'apache-arrow';
import { describe, expect, it } from 'vitest';

import { columnBuilder } from '../../../client/ts/dataset/builders.ts';

const ROWS = 5000; // past the builders' first 1,024 rows and 16 KiB of bytes

function column(type: DataType, value: (i: number) => unknown): unknown[] {
  return Array.from({ length: ROWS }, (_, i) => value(i));
}

const cases: [string, DataType, (i: number) => unknown][] = [
  ['int32', new Int32(), (i) => i * 7 - 100],
  ['int64', new Int64(), (i) => (i % 3 === 0 ? BigInt(i) * 1_000_000_007n : i)],
  ['float64', new Float64(), (i) => (i === 4000 ? null : i / 3)],
  ['bool', new Bool(), (i) => i % 3 === 1],
  ['bool_nulls', new Bool(), (i) => (i % 5 === 0 ? null : i % 2 === 0)],
  ['utf8', new Utf8(), (i) => (i < 10 ? 'same' : i % 11 === 0 ? `é ${i} ✓` : i % 2 ? 'ws://127.0.0.1:8765' : `{"k":${i}}`)],
  ['binary', new Binary(), (i) => (i > 2000 && i % 4 === 0 ? null : Uint8Array.from({ length: i % 40 }, (_, k) => (i + k) & 255))],
];

describe('column builders', () => {
  it.each(cases)('%s: the values written are the values read back through Arrow IPC', (_name, type, value) => {
    const values = column(type, value);
    const b = columnBuilder(type);
    for (const v of values) b.push(v);
    expect(b.length).toBe(ROWS);
    const field = new Field('c', type, true);
    const schema = new Schema([field]);
    const batch = new RecordBatch(schema, makeData({ type: new Struct([field]), length: ROWS, nullCount: 0, children: [b.finish()] }));
    const col = tableFromIPC(tableToIPC(new Table(batch))).getChild('c')!;
    // get(), not toArray(): a primitive column's toArray() is its values buffer, nulls read as 0.
    const read = Array.from({ length: col.length }, (_, i) => col.get(i) as unknown);
    const expected = values.map((v) => (v === undefined ? null : typeof v === 'number' && type instanceof Int64 ? BigInt(v) : v));
    expect(read.map((v) => (v instanceof Uint8Array ? Array.from(v) : v))).toEqual(expected.map((v) => (v instanceof Uint8Array ? Array.from(v) : v)));
    // Finished builders start over empty.
    expect(b.length).toBe(0);
    b.push(value(1));
    expect(b.finish().length).toBe(1);
  });

  it('refuses an Arrow type the dataset does not use', () => {
    expect(() => columnBuilder(new Struct([]))).toThrow(/no column builder/);
  });
});
