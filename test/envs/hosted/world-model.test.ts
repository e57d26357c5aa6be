/**
 * The torch world-model family's Node side: its serve flags are checked before anything starts, and
 * an env family's own metrics (Registry.exposeMetrics, how the world model's batch histograms
 * reach /metrics) are served on the server's /metrics next to the server's. The family end to end
 * (a torch model in a real worker, many clients) is tested from Python:
 * client/python/tests/test_torch_world_model.py (client/python/scripts/test-torch.sh).
 */
import { Histogram, Registry as PromRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';

import { torchWorldModelOptions } from '../../../bin/commands/serve.ts';
import { defaultRegistry } from '../../../envs/index.ts';
import { startTestServer } from '../../helpers/servers.ts';
import type { TestServer } from '../../helpers/servers.ts';

const FLAGS = {
  torchWorldModel: 'my_pkg.models:load',
  torchWorldModelDevice: 'auto',
  torchWorldModelBatchSize: '32',
  torchWorldModelBatchWindow: '2ms',
};

let srv: TestServer | null = null;
afterEach(async () => {
  await srv?.close();
  srv = null;
});

describe('torch world-model flags', () => {
  it('parses sizes, durations and the model kwargs', () => {
    expect(torchWorldModelOptions({ ...FLAGS, torchWorldModel: undefined })).toBeNull();
    expect(torchWorldModelOptions({ ...FLAGS, torchWorldModelKwargs: '{"size": 128}', torchWorldModelMemoryBudget: '40g' })).toEqual({
      model: 'my_pkg.models:load',
      modelKwargs: { size: 128 },
      device: 'auto',
      maxBatch: 32,
      batchWindowMs: 2,
      memoryBudgetBytes: 40 * 1024 ** 3,
    });
  });

  it('refuses what cannot work, naming the flag', () => {
    expect(() => torchWorldModelOptions({ ...FLAGS, torchWorldModelBatchSize: '0' })).toThrow('--torch-world-model-batch-size must be at least 1');
    expect(() => torchWorldModelOptions({ ...FLAGS, torchWorldModelKwargs: '[1]' })).toThrow('must be a JSON object');
    expect(() => torchWorldModelOptions({ ...FLAGS, torchWorldModelKwargs: '{' })).toThrow('--torch-world-model-kwargs is not JSON');
  });
});

describe('family metrics on /metrics', () => {
  it('serves what a family exposes next to the server’s own metrics', async () => {
    const registry = defaultRegistry();
    const family = new PromRegistry();
    const batch = new Histogram({ name: 'test_family_batch_size', help: 'a family histogram', buckets: [1, 8], registers: [family] });
    registry.exposeMetrics(family);
    batch.observe(4);
    srv = await startTestServer('ws', { registry });
    const text = await (await fetch(`${srv.server.url.replace('ws://', 'http://')}/metrics`)).text();
    expect(text).toContain('test_family_batch_size_bucket{le="8"} 1');
    expect(text).toContain('gymwire_open_sessions');
  });
});
