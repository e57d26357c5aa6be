/**
 * Reads a dataset written by {@link TrajectoryWriter} back into Arrow tables, and decodes `raw` /
 * `scalar` / `json` columns into wire values (images stay encoded bytes). The TypeScript twin of the
 * pyarrow recipe in docs/datasets.md.
 *
 * @example
 * const ds = await readDataset('out/');
 * const obs = decodeColumn(ds.steps, 'obs'); // Tensor per row
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { tableFromIPC } from 'apache-arrow';
import type { Table } from 'apache-arrow';

import { tensorFromBytes } from '../../../protocol/tensor.ts';
import type { DType } from '../../../protocol/tensor.ts';
import type { DatasetManifest } from './writer.ts';

export interface Dataset {
  manifest: DatasetManifest;
  steps: Table;
  episodes: Table;
}

export async function readDataset(dir: string): Promise<Dataset> {
  const manifest = JSON.parse(await readFile(join(dir, 'dataset.json'), 'utf8')) as DatasetManifest;
  const parts = await Promise.all(manifest.steps_files.map(async (f) => tableFromIPC(await readFile(join(dir, f)))));
  if (parts.length === 0) throw new Error(`${dir}/dataset.json lists no steps files`);
  const steps = parts.slice(1).reduce((a, b) => a.concat(b), parts[0]!);
  const episodes = tableFromIPC(await readFile(join(dir, manifest.episodes_file)));
  return { manifest, steps, episodes };
}

/** One column's values as wire values: tensors for raw, numbers for scalar, parsed JSON, image bytes. */
export function decodeColumn(table: Table, name: string): unknown[] {
  const field = table.schema.fields.find((f) => f.name === name);
  const vector = table.getChild(name);
  if (!field || !vector) throw new Error(`the dataset has no column ${name}`);
  const encoding = field.metadata.get('gymwire.encoding');
  const dtype = field.metadata.get('gymwire.dtype') as DType;
  const shape = JSON.parse(field.metadata.get('gymwire.shape') ?? '[]') as number[];
  const out: unknown[] = [];
  for (let i = 0; i < vector.length; i++) {
    const v: unknown = vector.get(i);
    if (v === null) out.push(null);
    else if (encoding === 'raw') out.push(tensorFromBytes(dtype, shape, (v as Uint8Array).slice()));
    else if (encoding === 'scalar') out.push(Number(v));
    else if (encoding === 'json') out.push(JSON.parse(v as string));
    else if (typeof v === 'bigint')
      out.push(Number(v)); // int64 bookkeeping columns (episode_id, seed)
    else out.push(v);
  }
  return out;
}
