/**
 * Evaluation of a NAVSIM agent over a split, against any env-like object (a local `NavsimEnv`, a
 * `RemoteEnv` from the TypeScript client): each scene is reset by index, the agent answers with 8
 * poses, and the step's info carries the sub-metrics. Scenes are spread over a few sessions so a
 * remote server can score them in parallel. Returns per-scene rows and NAVSIM-style means.
 *
 * @example
 * const report = await evaluateNavsim({ makeEnv: async () => new NavsimEnv(1), agent: 'pdm-closed', split: 'synthetic-test', version: 1 });
 * report.mean.pdms;
 */
import { Tensor } from '../../protocol/tensor.ts';
import { BASELINES, constantVelocityFromObs } from './agents.ts';
import type { SplitName } from './generator.ts';
import { generateScene, splitSize } from './generator.ts';
import { parseScene } from './scene.ts';

/** The part of an env (local or remote) that evaluation needs. */
export interface EnvLike {
  reset(opts?: {
    seed?: number | null;
    options?: Record<string, unknown> | null;
  }): Promise<{ obs: unknown; info: Record<string, unknown> }> | { obs: unknown; info: Record<string, unknown> };
  step(action: unknown): Promise<{ reward: number; info: Record<string, unknown> }> | { reward: number; info: Record<string, unknown> };
  close?(): Promise<void> | void;
}

/** An agent: observation + reset info -> 8 poses (x, y, heading), rear-axle frame, 0.5 s apart. */
export type NavsimAgent = (obs: unknown, info: Record<string, unknown>) => number[][] | Promise<number[][]>;

export const METRIC_KEYS_V1 = ['nc', 'dac', 'ddc', 'ttc', 'ep', 'comfort', 'pdms'] as const;
export const METRIC_KEYS_V2 = ['nc', 'dac', 'ddc', 'tlc', 'ep', 'ttc', 'lk', 'hc', 'epdms'] as const;

export interface EvalRow {
  scene_index: number;
  scene_token: string;
  score: number;
  metrics: Record<string, number>;
}

export interface EvalReport {
  agent: string;
  split: string;
  version: 1 | 2;
  scenes: number;
  mean: Record<string, number>;
  rows: EvalRow[];
  seconds: number;
}

/**
 * A built-in agent by name: `constant-velocity` (from the observation), `pdm-closed` and `human`
 * (from the scene, regenerated locally from the split and index, as a logged-data baseline is).
 */
export function builtinAgent(name: string, split: SplitName, version: 1 | 2): NavsimAgent {
  if (name === 'constant-velocity') {
    return (obs) => {
      const st = (obs as { ego_status: Tensor }).ego_status;
      return constantVelocityFromObs(st.toNumbers() as number[]);
    };
  }
  const f = BASELINES[name];
  if (!f) throw new Error(`unknown agent '${name}' (known: ${Object.keys(BASELINES).join(', ')})`);
  return (_obs, info) => f(parseScene(generateScene(split, Number(info.scene_index))), version);
}

/**
 * Runs `agent` over scenes [0, limit) of `split`. `makeEnv` is called `concurrency` times; each
 * env scores its share of scenes. `onProgress(done, total)` fires after each scene.
 */
export async function evaluateNavsim(opts: {
  makeEnv: () => Promise<EnvLike>;
  agent: string | NavsimAgent;
  split: SplitName;
  version: 1 | 2;
  limit?: number;
  concurrency?: number;
  onProgress?: (done: number, total: number, row: EvalRow) => void;
}): Promise<EvalReport> {
  const t0 = performance.now();
  const total = Math.min(opts.limit ?? Infinity, splitSize(opts.split));
  const agent = typeof opts.agent === 'string' ? builtinAgent(opts.agent, opts.split, opts.version) : opts.agent;
  const rows: EvalRow[] = new Array<EvalRow>(total);
  let next = 0;
  let done = 0;
  const keys = opts.version === 1 ? METRIC_KEYS_V1 : METRIC_KEYS_V2;
  const worker = async (): Promise<void> => {
    const env = await opts.makeEnv();
    try {
      while (next < total) {
        const i = next++;
        const { obs, info } = await env.reset({ options: { scene_index: i } });
        const poses = await agent(obs, info);
        const r = await env.step(Tensor.from('float32', [poses.length, 3], poses.flat()));
        const metrics: Record<string, number> = {};
        for (const k of keys) metrics[k] = Number(r.info[k] ?? NaN);
        rows[i] = { scene_index: i, scene_token: String(info.scene_token), score: r.reward, metrics };
        done++;
        opts.onProgress?.(done, total, rows[i] as EvalRow);
      }
    } finally {
      await env.close?.();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 2, total)) }, () => worker()));
  const mean: Record<string, number> = {};
  for (const k of keys) mean[k] = rows.reduce((s, r) => s + (r.metrics[k] as number), 0) / Math.max(1, rows.length);
  mean.score = rows.reduce((s, r) => s + r.score, 0) / Math.max(1, rows.length);
  return {
    agent: typeof opts.agent === 'string' ? opts.agent : 'custom',
    split: opts.split,
    version: opts.version,
    scenes: rows.length,
    mean,
    rows,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** A NAVSIM-style results table (percentages, as NAVSIM's leaderboard prints them). */
export function formatTable(report: EvalReport): string {
  const keys = report.version === 1 ? METRIC_KEYS_V1 : METRIC_KEYS_V2;
  const head = ['agent', ...keys.map((k) => k.toUpperCase())];
  const vals = [report.agent, ...keys.map((k) => ((report.mean[k] ?? 0) * 100).toFixed(1))];
  const w = head.map((h, i) => Math.max(h.length, (vals[i] as string).length));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(w[i] as number)).join(' | ')} |`;
  const sep = `|${w.map((n) => '-'.repeat(n + 2)).join('|')}|`;
  return [
    `NAVSIM v${report.version} (${report.version === 1 ? 'PDMS' : 'EPDMS'}) on ${report.split}: ${report.scenes} scenes in ${report.seconds.toFixed(1)} s`,
    line(head),
    sep,
    line(vals),
  ].join('\n');
}
