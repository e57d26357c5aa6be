/**
 * `gymwire/NavsimEnv-v1` / `-v2`: one NAVSIM scene per episode. `reset` picks a scene (seeded, or
 * `options.scene_index` / `options.scene_token`) and returns the ego status history, the driving
 * command and, when enabled by make kwargs, camera images, a BEV raster and LiDAR; `step` takes 8
 * poses (x, y, heading) in the rear-axle frame at 0.5 s, simulates them with the LQR tracker and
 * bicycle model and returns the PDMS (v1) or EPDMS (v2) as reward with every sub-metric in info.
 * Episodes are one step long (terminated = true).
 *
 * @example
 * const env = new NavsimEnv({ version: 1 });
 * const { obs } = env.reset({ seed: 0 });
 * const { reward, info } = env.step(Tensor.from('float32', [8, 3], poses));
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import type { Logger } from 'pino';
import { z } from 'zod';

import { Random } from '../../runtime/random.ts';
import type { Space } from '../../protocol/spaces.ts';
import { box, dict } from '../../protocol/spaces.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { Env, EnvMetadata, EnvTool, Info, ResetOptions, ResetResult, StepResult } from '../core/env.ts';
import { InvalidActionError, InvalidOptionsError, InvalidStateError, defineTool } from '../core/env.ts';
import type { ConfinePath } from '../core/data-roots.ts';
import { clientDataFailure, isFsError } from '../core/data-roots.ts';
import { packState, unpackState } from '../core/state.ts';
import { stateAt } from '../driving/agents.ts';
import { relativePose } from '../driving/geometry.ts';
import type { RenderBox } from '../driving/render/index.ts';
import { BEV_CHANNELS, CameraRig, SemanticGrid, cameraRigBytes, castLidar, extrinsics, intrinsics, navsimCameras, renderBev } from '../driving/render/index.ts';
import type { SceneResult } from './evaluate.ts';
import { SceneScorer } from './evaluate.ts';
import type { SplitName } from './generator.ts';
import { SPLITS, generateScene } from './generator.ts';
import type { Version } from './pdm.ts';
import { twoStageScore, twoStageWeights } from './pdm.ts';
import type { Scene } from './scene.ts';
import { SceneFormatError, parseScene } from './scene.ts';
import { endpoint, followUpScenes } from './two-stage.ts';

export const NavsimKwargsSchema = z
  .object({
    split: z.enum(['synthetic-train', 'synthetic-test']).default('synthetic-test'),
    /** A directory of scene JSON files (docs/navsim-scenes.md) served instead of a synthetic split. */
    scene_dir: z.string().nullable().optional(),
    cameras: z.boolean().default(false),
    camera_width: z.number().int().min(16).max(1920).default(256),
    camera_height: z.number().int().min(9).max(1080).default(144),
    bev: z.boolean().default(false),
    bev_size: z.number().int().min(16).max(512).default(128),
    lidar: z.boolean().default(false),
    lidar_channels: z.number().int().min(1).max(128).default(32),
    lidar_azimuth_steps: z.number().int().min(8).max(2048).default(360),
    /** v2 only: two-stage pseudo-simulation (a second step on the follow-up scenes, Gaussian-weighted). */
    two_stage: z.boolean().default(false),
    render_mode: z.enum(['rgb_array']).nullable().optional(),
  })
  .strict();
export type NavsimKwargs = z.input<typeof NavsimKwargsSchema>;

const MIB = 1024 * 1024;
/** Frames of history per camera in an observation. */
const CAMERA_HISTORY = 4;
/** Bytes of a uint8 or float32 observation element while its answer is encoded and held (obs, frame, reply cache). */
const ANSWER_COPIES = 3;

/**
 * The memory one session holds, for the server's memory budgets: scenes and map rasters (measured
 * ~19 MiB after 20 synthetic scenes; a scene directory is assumed larger), camera rigs with four
 * frames of history per camera, the BEV raster and the LiDAR sweeps.
 */
export function estimateNavsimBytes(kwargs: NavsimKwargs): number {
  const o = NavsimKwargsSchema.parse(kwargs);
  let bytes = (o.scene_dir ? 64 : 24) * MIB;
  if (o.cameras) {
    const cams = navsimCameras(o.camera_width, o.camera_height);
    bytes += cameraRigBytes(cams) + cams.length * o.camera_width * o.camera_height * 3 * (CAMERA_HISTORY - 1) * ANSWER_COPIES;
  }
  if (o.bev) bytes += o.bev_size * o.bev_size * BEV_CHANNELS.length * ANSWER_COPIES;
  if (o.lidar) bytes += 6 * o.lidar_channels * o.lidar_azimuth_steps * 4 * ANSWER_COPIES;
  return bytes;
}

const MAX_POSE_M = 200;
const HISTORY_T = [-1.5, -1.0, -0.5, 0];

/** Decodes an action (tensor, nested array, or {poses, interval}) to poses, or throws InvalidActionError. */
export function parseAction(action: unknown): { poses: number[][]; interval: number } {
  let raw: unknown = action;
  let interval = 0.5;
  if (raw && typeof raw === 'object' && !(raw instanceof Tensor) && !Array.isArray(raw) && 'poses' in raw) {
    const o = raw as { poses: unknown; interval?: unknown };
    raw = o.poses;
    if (o.interval !== undefined) {
      if (typeof o.interval !== 'number' || !(o.interval > 0 && o.interval <= 1))
        throw new InvalidActionError(`interval must be a number in (0, 1] seconds, got ${String(o.interval)}`);
      interval = o.interval;
    }
  }
  let rows: number[][];
  if (raw instanceof Tensor) {
    if (raw.shape.length !== 2 || raw.shape[1] !== 3)
      throw new InvalidActionError(`the trajectory must have shape [8, 3] (x, y, heading per pose), got [${raw.shape.join(', ')}]`);
    const flat = raw.toNumbers() as number[];
    rows = [];
    for (let i = 0; i < (raw.shape[0] as number); i++) rows.push(flat.slice(3 * i, 3 * i + 3));
  } else if (Array.isArray(raw)) {
    rows = raw.map((r, i) => {
      if (!Array.isArray(r) || r.length !== 3) throw new InvalidActionError(`pose ${i} must be [x, y, heading]`);
      return r.map((v) => Number(v));
    });
  } else throw new InvalidActionError('the action must be a float32 [8, 3] tensor of poses (x, y, heading), or {poses, interval}');
  if (rows.length < 1 || rows.length > 80) throw new InvalidActionError(`expected 8 poses (4 s at 0.5 s), got ${rows.length}`);
  if (interval === 0.5 && rows.length !== 8) throw new InvalidActionError(`expected 8 poses (4 s at 0.5 s), got ${rows.length}`);
  if (Math.abs(rows.length * interval - 4) > 1e-6) throw new InvalidActionError(`poses must cover 4 s: ${rows.length} x ${interval} s`);
  rows.forEach((r, i) => {
    if (!r.every((v) => Number.isFinite(v))) throw new InvalidActionError(`pose ${i} has a NaN or infinite value: [${r.join(', ')}]`);
    if (Math.abs(r[0] as number) > MAX_POSE_M || Math.abs(r[1] as number) > MAX_POSE_M)
      throw new InvalidActionError(
        `pose ${i} (${(r[0] as number).toFixed(1)}, ${(r[1] as number).toFixed(1)}) is out of range: x and y must lie within ±${MAX_POSE_M} m of the ego (rear-axle frame, metres)`,
      );
    if (Math.abs(r[2] as number) > 2 * Math.PI + 1e-6)
      throw new InvalidActionError(`pose ${i} heading ${(r[2] as number).toFixed(3)} rad is out of range: headings must lie within ±2π`);
  });
  return { poses: rows, interval };
}

/**
 * A directory of scene files that a client named (make kwarg `scene_dir`), already resolved inside
 * the server's data roots: every file read goes through `confine`, and a file that does not load is
 * the client's fault, reported without its path or content (envs/core/data-roots.ts).
 */
export interface ClientSceneDir {
  dir: string;
  confine: ConfinePath;
  log?: Logger;
}

const SCENE_DATA = 'gymwire NAVSIM scenes (docs/navsim-scenes.md)';
const isSceneDataFault = (err: unknown) => err instanceof SceneFormatError || err instanceof SyntaxError || isFsError(err);

/** The scene source of an env: a synthetic split, or a directory of scene files. */
export class SceneSource {
  private readonly files: string[] | null;
  private readonly cache = new Map<number, { scene: Scene; scorer: SceneScorer | null; grid: SemanticGrid | null }>();
  private readonly client: ClientSceneDir | null;
  readonly dir: string | null;
  constructor(
    readonly split: SplitName,
    dir: string | ClientSceneDir | null = null,
  ) {
    this.client = typeof dir === 'object' ? dir : null;
    this.dir = this.client ? this.client.dir : (dir as string | null);
    try {
      this.files = this.dir
        ? readdirSync(this.dir)
            .filter((f) => f.endsWith('.json'))
            .sort()
        : null;
    } catch (err) {
      throw this.client ? clientDataFailure('scene_dir', SCENE_DATA, err, isSceneDataFault, this.client.log) : err;
    }
    if (this.files && this.files.length === 0) throw new InvalidOptionsError(`no scene files (*.json) in ${this.client ? 'scene_dir' : (this.dir ?? '')}`);
  }
  get size(): number {
    return this.files ? this.files.length : SPLITS[this.split].size;
  }
  private entry(i: number): { scene: Scene; scorer: SceneScorer | null; grid: SemanticGrid | null } {
    let e = this.cache.get(i);
    if (!e) {
      let scene: Scene;
      if (this.files) {
        const path = join(this.dir as string, this.files[i] as string);
        const client = this.client;
        if (client) {
          try {
            scene = parseScene(JSON.parse(readFileSync(client.confine(path), 'utf8')), path);
          } catch (err) {
            throw clientDataFailure('scene_dir', SCENE_DATA, err, isSceneDataFault, client.log);
          }
        } else scene = parseScene(JSON.parse(readFileSync(path, 'utf8')), path);
      } else scene = parseScene(generateScene(this.split, i));
      // A small per-env cache: resets of recent scenes reuse their map index and PDM-Closed.
      if (this.cache.size >= 32) this.cache.delete(this.cache.keys().next().value as number);
      e = { scene, scorer: null, grid: null };
      this.cache.set(i, e);
    }
    return e;
  }
  get(i: number): Scene {
    return this.entry(i).scene;
  }
  /** The scene's scorer (map index, scoring worlds and PDM-Closed, computed once). */
  scorer(i: number): SceneScorer {
    const e = this.entry(i);
    return (e.scorer ??= new SceneScorer(e.scene));
  }
  /** The scene's semantic raster for the sensors, built once. */
  grid(i: number): SemanticGrid {
    const e = this.entry(i);
    return (e.grid ??= SemanticGrid.fromMap(this.scorer(i).map));
  }
  indexOf(token: string): number {
    if (this.files) return this.files.findIndex((f) => f === token || f === `${token}.json`);
    const m = /(\d+)/.exec(token.split('/').pop() ?? '');
    const i = m ? Number(m[1]) : -1;
    return i >= 0 && i < this.size && this.get(i).name === token ? i : -1;
  }
}

export class NavsimEnv implements Env<Record<string, unknown>, unknown> {
  /** The tools every NAVSIM session has; static, so listings and MCP hosts know them before any session exists. */
  static readonly TOOLS: readonly EnvTool<never>[] = [
    defineTool({
      name: 'get_route_info',
      description:
        'The route of the current scene: roadblock ids, the route centreline ahead (ego frame, up to 100 m, 2 m spacing), the speed limit and the driving command (left, straight, right, unknown).',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => (ctx.env as NavsimEnv).routeInfo(),
    }),
    defineTool({
      name: 'get_ego_state',
      description:
        'The ego state: global pose (rear axle), velocity and acceleration in the ego frame, and the 4-frame status history (x, y, heading, vx, vy, ax, ay relative to the current frame).',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => (ctx.env as NavsimEnv).egoState(),
    }),
    defineTool({
      name: 'step_with_waypoints',
      description:
        'Submit the planned trajectory as waypoints [x, y, heading] in the ego rear-axle frame (x forward, y left, metres, radians), 8 poses 0.5 s apart by default; returns the score and sub-metrics.',
      inputSchema: z.object({ waypoints: z.array(z.array(z.number()).length(3)).min(1).max(80), interval: z.number().positive().max(1).optional() }).strict(),
      handler: (args, ctx) => {
        const r = (ctx.env as NavsimEnv).step({ poses: args.waypoints, interval: args.interval ?? 0.5 });
        return { reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
      },
    }),
  ];

  readonly version: Version;
  readonly observationSpace: Space;
  /** Per pose: x, y within 200 m (a pose 1 km away is an error, not a score), heading within ±2π. */
  readonly actionSpace = box({
    low: Tensor.from('float32', [8, 3], Array.from({ length: 8 }, () => [-MAX_POSE_M, -MAX_POSE_M, -2 * Math.PI]).flat()),
    high: Tensor.from('float32', [8, 3], Array.from({ length: 8 }, () => [MAX_POSE_M, MAX_POSE_M, 2 * Math.PI]).flat()),
    dtype: 'float32',
  });
  readonly metadata: EnvMetadata;
  readonly renderMode: 'rgb_array' | null;
  get tools(): readonly EnvTool<never>[] {
    return NavsimEnv.TOOLS;
  }
  readonly opts: z.output<typeof NavsimKwargsSchema>;

  private readonly rng = new Random();
  private readonly source: SceneSource;
  private sceneIndex = -1;
  private stepped = false;
  private scorer: SceneScorer | null = null;
  private rig: CameraRig | null = null;
  private grid: SemanticGrid | null = null;
  private lastObs: Record<string, unknown> | null = null;
  private current: Scene | null = null;
  /** Two-stage state: stage-1 score and poses once stage 1 is done. */
  private stage1: { score: number; poses: number[][]; interval: number; endpoint: { x: number; y: number }; ups: Scene[]; shown: number } | null = null;

  /**
   * `sceneDir`: the scene directory a client named, resolved by the registry (kwargs.scene_dir is
   * then only its name). `shell`: only the spaces, metadata and tool schemas, without preparing
   * cameras (the stand-in of an env that runs on an env thread: envs/core/env-threads.ts).
   */
  constructor(version: Version, kwargs: NavsimKwargs = {}, sceneDir?: ClientSceneDir, opts: { shell?: boolean } = {}) {
    this.version = version;
    this.opts = NavsimKwargsSchema.parse(kwargs);
    this.renderMode = this.opts.render_mode ?? null;
    if (this.opts.two_stage && version !== 2) throw new InvalidOptionsError('two_stage is a NAVSIM v2 option: make gymwire/NavsimEnv-v2');
    this.source = new SceneSource(this.opts.split, sceneDir ?? this.opts.scene_dir ?? null);
    const o = this.opts;
    const spaces: Record<string, Space> = {
      ego_status: box({ low: -Infinity, high: Infinity, shape: [4, 7], dtype: 'float32' }),
      driving_command: box({ low: 0, high: 1, shape: [4], dtype: 'int8' }),
    };
    const cams = navsimCameras(o.camera_width, o.camera_height);
    if (o.cameras) {
      if (!opts.shell) this.rig = new CameraRig(cams);
      const camSpaces: Record<string, Space> = {};
      for (const c of cams) camSpaces[c.name] = box({ low: 0, high: 255, shape: [4, o.camera_height, o.camera_width, 3], dtype: 'uint8' });
      spaces.cameras = dict(camSpaces);
    }
    if (o.bev) spaces.bev = box({ low: 0, high: 255, shape: [o.bev_size, o.bev_size, BEV_CHANNELS.length], dtype: 'uint8' });
    if (o.lidar) spaces.lidar = box({ low: -Infinity, high: Infinity, shape: [6, o.lidar_channels * o.lidar_azimuth_steps], dtype: 'float32' });
    this.observationSpace = dict(spaces);
    this.metadata = {
      render_modes: ['rgb_array'],
      benchmark: `NAVSIM v${version} (${version === 1 ? 'PDMS' : 'EPDMS'})`,
      camera_names: cams.map((c) => c.name),
      cameras: Object.fromEntries(
        cams.map((c) => [
          c.name,
          {
            intrinsics: intrinsics(c),
            distortion: [0, 0, 0, 0, 0],
            sensor2lidar_rotation: extrinsics(c).rotation,
            sensor2lidar_translation: extrinsics(c).translation,
          },
        ]),
      ),
      bev_channels: [...BEV_CHANNELS],
      scene_count: this.source.size,
      synthetic_render: true,
    };
  }

  private get scene(): Scene {
    if (this.sceneIndex < 0 || !this.current) throw new InvalidActionError('call reset before step');
    return this.current;
  }

  reset(opts: ResetOptions = {}): ResetResult<Record<string, unknown>> {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const o = opts.options ?? {};
    let idx: number;
    if (o.scene_index !== undefined && o.scene_index !== null) {
      const i = Number(o.scene_index);
      if (!Number.isInteger(i) || i < 0 || i >= this.source.size)
        throw new InvalidOptionsError(`scene_index must be an integer in [0, ${this.source.size - 1}], got ${String(o.scene_index)}`);
      idx = i;
    } else if (typeof o.scene_token === 'string') {
      idx = this.source.indexOf(o.scene_token);
      if (idx < 0) throw new InvalidOptionsError(`unknown scene_token '${o.scene_token}' in ${this.opts.scene_dir ?? this.opts.split}`);
    } else {
      const unknown = Object.keys(o).filter((k) => k !== 'scene_index' && k !== 'scene_token');
      if (unknown.length > 0) throw new InvalidOptionsError(`unknown reset options: ${unknown.join(', ')} (accepted: scene_index, scene_token)`);
      idx = this.rng.integer(0, this.source.size);
    }
    return this.load(idx);
  }

  private load(idx: number): ResetResult<Record<string, unknown>> {
    this.sceneIndex = idx;
    this.stepped = false;
    this.stage1 = null;
    this.current = this.source.get(idx);
    const scene = this.current;
    this.scorer = this.source.scorer(idx);
    this.grid = this.rig || this.opts.bev || this.opts.lidar || this.renderMode ? this.source.grid(idx) : null;
    this.lastObs = this.observe();
    return { obs: this.lastObs, info: { scene_token: scene.name, scene_index: idx, scene_type: scene.scene_type, version: this.version } };
  }

  private historyPoses(): { t: number; x: number; y: number; heading: number; vx: number; vy: number; ax: number; ay: number }[] {
    const s = this.scene;
    const hist = [...(s.ego_history ?? [])].sort((a, b) => a.t - b.t);
    return HISTORY_T.map((t) => {
      if (t === 0) return { t, ...s.ego };
      const h = hist.find((e) => Math.abs(e.t - t) < 1e-6);
      if (h) return h;
      // Without history, assume constant velocity backwards.
      return { t, ...s.ego, x: s.ego.x + Math.cos(s.ego.heading) * s.ego.vx * t, y: s.ego.y + Math.sin(s.ego.heading) * s.ego.vx * t };
    });
  }

  private observe(): Record<string, unknown> {
    const s = this.scene;
    const status = new Float32Array(28);
    const hist = this.historyPoses();
    hist.forEach((e, i) => {
      const p = relativePose(s.ego, e);
      status.set([p.x, p.y, p.heading, e.vx, e.vy, e.ax, e.ay], i * 7);
    });
    const cmd = Int8Array.from(s.driving_command ?? [0, 0, 0, 1]);
    const obs: Record<string, unknown> = { ego_status: Tensor.from('float32', [4, 7], status), driving_command: Tensor.from('int8', [4], cmd) };
    if (this.rig && this.grid) {
      const { camera_width: W, camera_height: H } = this.opts;
      const frames = hist.map((e) => this.rig!.render({ grid: this.grid!, ego: e, boxes: this.boxesAt(e.t) }));
      const cams: Record<string, Tensor> = {};
      this.rig.cameras.forEach((c, ci) => {
        const data = new Uint8Array(4 * H * W * 3);
        frames.forEach((f, fi) => data.set(f[ci] as Uint8Array, fi * H * W * 3));
        cams[c.name] = Tensor.from('uint8', [4, H, W, 3], data);
      });
      obs.cameras = cams;
    }
    if (this.opts.bev && this.grid) {
      const b = renderBev({ grid: this.grid, ego: s.ego, boxes: this.boxesAt(0) }, { size: this.opts.bev_size, resolution: 0.5 });
      obs.bev = Tensor.from('uint8', b.shape, b.data);
    }
    if (this.opts.lidar && this.grid) {
      const total = this.opts.lidar_channels * this.opts.lidar_azimuth_steps;
      const l = castLidar(
        { grid: this.grid, ego: s.ego, boxes: this.boxesAt(0) },
        { channels: this.opts.lidar_channels, azimuthSteps: this.opts.lidar_azimuth_steps },
      );
      // Fixed shape for the Box space: rays without a return are zero rows at the end.
      const data = new Float32Array(6 * total);
      for (let r = 0; r < 6; r++) data.set(l.data.subarray(r * l.n, (r + 1) * l.n), r * total);
      obs.lidar = Tensor.from('float32', [6, total], data);
    }
    return obs;
  }

  private boxesAt(t: number): RenderBox[] {
    const out: RenderBox[] = [];
    for (const tr of this.scorer?.world(this.version).tracks ?? []) {
      const st = stateAt(tr, t) ?? (tr.t.length === 1 ? stateAt(tr, tr.t[0] as number) : null);
      if (st) out.push({ x: st.x, y: st.y, heading: st.heading, length: tr.length, width: tr.width, height: tr.height, type: tr.type });
    }
    return out;
  }

  step(action: unknown): StepResult<Record<string, unknown>> {
    if (this.sceneIndex < 0 || !this.scorer) throw new InvalidActionError('call reset before step');
    if (this.stepped) throw new InvalidActionError('the episode is over (one step per scene): call reset');
    const { poses, interval } = parseAction(action);
    if (this.opts.two_stage) return this.twoStageStep(poses, interval);
    const r = this.scorer.score(poses, { version: this.version, interval });
    this.stepped = true;
    return { obs: this.lastObs as Record<string, unknown>, reward: r.metrics.score, terminated: true, truncated: false, info: resultInfo(r, this.scene.name) };
  }

  /** Stage 1 scores and moves to the follow-up nearest the agent's endpoint; stage 2 scores the plan on every follow-up. */
  private twoStageStep(poses: number[][], interval: number): StepResult<Record<string, unknown>> {
    const scorer = this.scorer as SceneScorer;
    const base = this.source.get(this.sceneIndex);
    if (this.stage1 === null) {
      const ups = followUpScenes(base);
      const r = scorer.score(poses, { version: 2, interval });
      if (ups.length === 0) {
        this.stepped = true;
        return {
          obs: this.lastObs as Record<string, unknown>,
          reward: r.metrics.score,
          terminated: true,
          truncated: false,
          info: { ...resultInfo(r, base.name), stage: 1, two_stage: false },
        };
      }
      const end = endpoint(r.simulatedStates);
      const w = twoStageWeights(
        end,
        ups.map((u) => u.ego),
      );
      const best = w.indexOf(Math.max(...w));
      this.stage1 = { score: r.metrics.score, poses, interval, endpoint: end, ups, shown: best };
      this.current = ups[best] as Scene;
      this.scorer = new SceneScorer(this.current);
      this.lastObs = this.observe();
      return {
        obs: this.lastObs,
        reward: 0,
        terminated: false,
        truncated: false,
        info: { ...resultInfo(r, base.name), stage: 1, stage1_score: r.metrics.score, stage2_weights: w, stage2_scene: this.current.name },
      };
    }
    const { ups, shown: shownIdx } = this.stage1;
    const w = twoStageWeights(
      this.stage1.endpoint,
      ups.map((u) => u.ego),
    );
    const results = ups.map((u, i) => (i === shownIdx ? (this.scorer as SceneScorer) : new SceneScorer(u)).score(poses, { version: 2, interval }));
    const stage2 = results.map((r) => r.metrics.score);
    const reward = twoStageScore(this.stage1.score, w, stage2);
    this.stepped = true;
    const shown = results[shownIdx] as SceneResult;
    return {
      obs: this.lastObs as Record<string, unknown>,
      reward,
      terminated: true,
      truncated: false,
      info: { ...resultInfo(shown, this.scene.name), stage: 2, stage1_score: this.stage1.score, stage2_scores: stage2, stage2_weights: w, score: reward },
    };
  }

  render(): Tensor | null {
    // Gymnasium's rule: no render mode, no frame (the server answers ENV_ERR_UNSUPPORTED).
    if (this.renderMode === null) return null;
    if (!this.grid || this.sceneIndex < 0) {
      if (this.sceneIndex < 0) return null;
      this.grid = this.source.grid(this.sceneIndex);
    }
    const b = renderBev({ grid: this.grid, ego: this.scene.ego, boxes: this.boxesAt(0) }, { size: 256, resolution: 0.25 });
    const rgb = new Uint8Array(256 * 256 * 3);
    const C = BEV_CHANNELS.length;
    for (let i = 0; i < 256 * 256; i++) {
      const px = b.data.subarray(i * C, i * C + C);
      const col = px[7]
        ? [40, 200, 90]
        : px[3]
          ? [200, 50, 50]
          : px[4]
            ? [240, 190, 40]
            : px[5]
              ? [40, 150, 220]
              : px[6]
                ? [250, 120, 20]
                : px[1]
                  ? [230, 230, 230]
                  : px[2]
                    ? [190, 190, 190]
                    : px[0]
                      ? [80, 80, 85]
                      : [30, 45, 30];
      rgb.set(col, i * 3);
    }
    return Tensor.from('uint8', [256, 256, 3], rgb);
  }

  private routeInfo(): Info {
    const s = this.scene;
    const w = (this.scorer as SceneScorer).world(this.version);
    const line = w.centerline;
    const s0 = line.project(s.ego.x, s.ego.y).s;
    const pts: number[][] = [];
    for (let d = 0; d <= 100 && s0 + d <= line.length; d += 2) {
      const p = relativePose(s.ego, line.interpolate(s0 + d));
      pts.push([p.x, p.y, p.heading]);
    }
    const lane = this.scorer?.map
      .lanesAt(s.ego.x, s.ego.y)
      .map((id) => this.scorer?.map.lane(id))
      .find((l) => l && w.routeLaneIds.has(l.id));
    return {
      route_roadblock_ids: s.route_roadblock_ids,
      centerline_ego_frame: pts,
      speed_limit_mps: lane?.speedLimit ?? null,
      driving_command: s.driving_command ?? [0, 0, 0, 1],
      command_order: ['left', 'straight', 'right', 'unknown'],
    };
  }

  private egoState(): Info {
    const s = this.scene;
    const hist = this.historyPoses().map((e) => {
      const p = relativePose(s.ego, e);
      return [p.x, p.y, p.heading, e.vx, e.vy, e.ax, e.ay];
    });
    return { x: s.ego.x, y: s.ego.y, heading: s.ego.heading, vx: s.ego.vx, vy: s.ego.vy, ax: s.ego.ax, ay: s.ego.ay, history: hist, history_t: HISTORY_T };
  }

  getState(): Uint8Array {
    return packState('navsim/1', {
      rng: this.rng.getState(),
      sceneIndex: this.sceneIndex,
      stepped: this.stepped,
      stage1: this.stage1 ? { poses: this.stage1.poses, interval: this.stage1.interval } : null,
    });
  }

  setState(bytes: Uint8Array): void {
    const st = unpackState('navsim/1', bytes) as {
      rng?: number[];
      sceneIndex?: number;
      stepped?: boolean;
      stage1?: { poses: number[][]; interval: number } | null;
    };
    if (!st || !Array.isArray(st.rng) || typeof st.sceneIndex !== 'number') throw new InvalidStateError('not a NavsimEnv state');
    if (st.sceneIndex >= 0) {
      this.load(st.sceneIndex);
      // Replaying stage 1 rebuilds the follow-up exactly (scoring is deterministic).
      if (st.stage1 && this.opts.two_stage) this.twoStageStep(st.stage1.poses, st.stage1.interval);
    } else {
      this.sceneIndex = -1;
      this.current = null;
    }
    this.rng.setState(st.rng);
    this.stepped = st.stepped === true;
  }
}

/** The step info: every sub-metric, raw quantities and the simulated states. */
export function resultInfo(r: SceneResult, token: string): Info {
  const m = r.metrics;
  const info: Info = {
    scene_token: token,
    version: r.version,
    nc: m.nc,
    dac: m.dac,
    ddc: m.ddc,
    tlc: m.tlc,
    ep: m.ep,
    ttc: m.ttc,
    lk: m.lk,
    hc: m.hc,
    ec: m.ec,
    comfort: m.comfort,
    multiplicative_prod: m.multiplicative_prod,
    pdms: m.pdms,
    epdms: m.epdms,
    score: m.score,
    progress_raw_m: r.progressRawM,
    pdm_closed_progress_m: r.pdmClosedProgressM,
    collision_time_s: r.collisionTimeS,
    ttc_time_s: r.ttcTimeS,
    simulated_states: Tensor.from('float64', [41, 11], r.simulatedStates),
  };
  if (r.human)
    info.human_metrics = {
      nc: r.human.nc,
      dac: r.human.dac,
      ddc: r.human.ddc,
      tlc: r.human.tlc,
      ep: r.human.ep,
      ttc: r.human.ttc,
      lk: r.human.lk,
      hc: r.human.hc,
    };
  return info;
}
