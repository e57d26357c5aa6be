/**
 * Reads a trajectory dataset with the TypeScript reader and prints a JSON summary, so the Python
 * tests can check that datasets written by the Python SDK are read back identically.
 *
 * Usage: npx tsx client/python/tests/ts/read_dataset.ts DIR
 */
import { decodeColumn, readDataset } from '../../../ts/dataset/reader.ts';
import { Tensor } from '../../../../protocol/tensor.ts';

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: read_dataset.ts <dir>');
  const ds = await readDataset(dir);
  const obs = decodeColumn(ds.steps, 'obs').map((v) => (v instanceof Tensor ? v.toNumbers() : v));
  const action = decodeColumn(ds.steps, 'action').map((v) => (v instanceof Tensor ? v.toNumbers() : Number(v)));
  const reward = Array.from(ds.steps.getChild('reward')!.toArray() as Float64Array);
  const episodes = ds.episodes.numRows;
  process.stdout.write(`${JSON.stringify({ rows: ds.steps.numRows, episodes, obs, action, reward, counts: ds.manifest.counts })}\n`);
}

await main();
