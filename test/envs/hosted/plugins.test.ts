import { describe, expect, it } from 'vitest';

import { Registry } from '../../../envs/core/registry.ts';
import { loadPlugin } from '../../../envs/hosted/plugins.ts';

const dataModule = (code: string) => `data:text/javascript,${encodeURIComponent(code)}`;

describe('loadPlugin', () => {
  it('registers the envs of a TypeScript plugin and returns their ids', async () => {
    const registry = new Registry();
    const ids = await loadPlugin(registry, 'examples/plugin-env/envs.ts');
    expect(ids).toEqual(['mine/Corridor-v0']);
    const env = await registry.make('mine/Corridor-v0', { length: 4 });
    const { obs } = await env.reset({ seed: 1 });
    expect(registry.list()[0]!.max_episode_steps).toBe(100);
    expect(obs).toBeDefined();
  });

  it('takes a default export as the register function', async () => {
    const registry = new Registry();
    const code = "export default (r) => r.register({ id: 'mine/Empty-v0', entryPoint: () => ({}) });";
    expect(await loadPlugin(registry, dataModule(code))).toEqual(['mine/Empty-v0']);
  });

  it('refuses a module without a register function, naming what it needs', async () => {
    await expect(loadPlugin(new Registry(), dataModule('export const envs = [];'))).rejects.toThrow(/exports no register\(registry\) function/);
  });

  it('refuses a plugin that registers nothing', async () => {
    await expect(loadPlugin(new Registry(), dataModule('export function register() {}'))).rejects.toThrow(/registered no envs/);
  });
});
