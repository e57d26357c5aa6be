/**
 * `gymwire/Bench2Drive-v0`: one Bench2Drive-style route per episode, closed loop at 20 Hz (spec
 * §5.2). Each step takes throttle/steer/brake (or, with `action_type: 'waypoints'`, six ego-frame
 * waypoints 0.5 s apart that a reference waypoint controller, Bench2DriveZoo's `control_pid` by
 * default, turns into controls) and advances the
 * world one 0.05 s tick. Observations: speed, IMU, GNSS, position, the target point in the ego frame
 * and the RoadOption command (near and far) from the leaderboard's downsampled global plan, and,
 * when enabled at make, the six Bench2Drive cameras and a LiDAR sweep from the shared renderer
 * (synthetic renders). Info carries R, P, the driving score, the status and every infraction with
 * its time and place; the final info also has the leaderboard-style route record and comfort.
 *
 * @example
 * const env = new Bench2DriveEnv({ route: 'ParkedObstacle_0' });
 * const { obs } = env.reset({ seed: 0 });
 * env.step(Tensor.from('float32', [3], [0.5, 0, 0]));
 */
import { z } from 'zod';

import type { Space } from '../../protocol/spaces.ts';
import { box, dict, discrete, sequence } from '../../protocol/spaces.ts';
import { Random } from '../../runtime/random.ts';
import { Tensor } from '../../protocol/tensor.ts';
import type { Env, EnvMetadata, EnvTool, Info, ResetOptions, ResetResult, StepResult, ToolContext, Value } from '../core/env.ts';
import { InvalidActionError, InvalidOptionsError, defineTool } from '../core/env.ts';
import { packState, unpackState } from '../core/state.ts';
import type { CameraSpec, RenderBox, RenderInput } from '../driving/render/index.ts';
import { CameraRig, SemanticGrid, cameraRigBytes, castLidar } from '../driving/render/index.ts';
import { ROAD_OPTION_NAMES, RoutePlanner } from './commands.ts';
import type { RoutePoint } from './commands.ts';
import type { InfractionEntry } from './scoring.ts';
import { ALL_INFRACTION_KEYS, INFRACTION_KEYS, penaltyFactor } from './scoring.ts';
import { DEV_ROUTE_IDS, ROUTE_IDS, abilitiesOf, buildScenario, parseRouteId } from './scenarios.ts';
import type { Scenario } from './sim.ts';
import { DT, MAX_TICKS, World } from './sim.ts';
import type { Control } from './vehicle.ts';
import { EGO, WaypointController } from './vehicle.ts';
import { WAYPOINT_CONTROLLER_NAMES, WAYPOINT_CONTROLLERS } from '../../runtime/waypoint-control.ts';
import type { WaypointControllerName } from '../../runtime/waypoint-control.ts';
import { privilegedView, restoreWorld, snapshotWorld } from './worldstate.ts';

const DEG = Math.PI / 180;
export const CAMERA_NAMES = ['CAM_FRONT', 'CAM_FRONT_LEFT', 'CAM_FRONT_RIGHT', 'CAM_BACK', 'CAM_BACK_LEFT', 'CAM_BACK_RIGHT'] as const;

/** Bench2Drive's rig (`tools/data_collect.py`), converted from CARLA's y-right frame to y-left. */
export function bench2driveCameras(width = 1600, height = 900, names: readonly string[] = CAMERA_NAMES): CameraSpec[] {
  const all: Record<string, [number, number, number, number]> = {
    CAM_FRONT: [0.8, 0, 0, 70],
    CAM_FRONT_LEFT: [0.27, 0.55, 55, 70],
    CAM_FRONT_RIGHT: [0.27, -0.55, -55, 70],
    CAM_BACK: [-2.0, 0, 180, 110],
    CAM_BACK_LEFT: [-0.32, 0.55, 110, 70],
    CAM_BACK_RIGHT: [-0.32, -0.55, -110, 70],
  };
  return names.map((name) => {
    const [x, y, yaw, fov] = all[name]!;
    return { name, x, y, z: 1.6, yaw: yaw * DEG, pitch: 0, fovDeg: fov, width, height };
  });
}

export const Bench2DriveKwargsSchema = z
  .object({
    route: z
      .string()
      .refine((r) => ROUTE_IDS.includes(r), { message: `unknown route; valid routes: ${ROUTE_IDS.join(', ')}` })
      .optional(),
    routes: z.enum(['all', 'dev']).optional(),
    background_vehicles: z.number().int().min(0).max(80).optional(),
    cameras: z.union([z.boolean(), z.array(z.enum(CAMERA_NAMES)).min(1)]).optional(),
    camera_width: z.number().int().min(16).max(3200).optional(),
    camera_height: z.number().int().min(9).max(1800).optional(),
    lidar: z.boolean().optional(),
    action_type: z.enum(['control', 'waypoints']).optional(),
    /** Which reference controller turns waypoint actions into controls (default 'bench2drive'). */
    waypoint_controller: z.enum(WAYPOINT_CONTROLLER_NAMES as [WaypointControllerName, ...WaypointControllerName[]]).optional(),
    privileged: z.boolean().optional(),
    render_mode: z.enum(['rgb_array']).nullable().optional(),
  })
  .strict();
export type Bench2DriveKwargs = z.infer<typeof Bench2DriveKwargsSchema>;

export const WAYPOINTS = 6;

const MIB = 1024 * 1024;

/**
 * The memory one session holds, for the server's memory budgets: the world, plus about 1 MiB of
 * cached map raster per route it may visit, plus its cameras (see cameraRigBytes) and a LiDAR sweep.
 * Measured: 1.8 MiB for one route without sensors, 11 MiB after 12 routes, 106 MiB of camera
 * memory at the default six 1600x900 cameras (before the answers that carry the images).
 */
export function estimateBench2DriveBytes(kwargs: Bench2DriveKwargs): number {
  const routes = kwargs.route ? 1 : (kwargs.routes === 'dev' ? DEV_ROUTE_IDS : ROUTE_IDS).length;
  const camNames = kwargs.cameras === true ? CAMERA_NAMES : kwargs.cameras ? kwargs.cameras : [];
  const cameras = camNames.length ? cameraRigBytes(bench2driveCameras(kwargs.camera_width ?? 1600, kwargs.camera_height ?? 900, camNames)) : 0;
  return 4 * MIB + routes * MIB + cameras + (kwargs.lidar ? 4 * MIB : 0);
}

/** Lat/lon from metres around (0, 0), as a GNSS sensor at the map origin would report. */
function toGnss(x: number, y: number): [number, number, number] {
  const R = 6378137;
  return [(y / R) * (180 / Math.PI), (x / R) * (180 / Math.PI), 0];
}

/** The longest span one drive_for / follow_waypoints_for call may run: 10 s of route. */
export const MAX_SPAN_TICKS = 200;
/** How many route points (2 m apart) a span summary shows ahead of the ego. */
const ROUTE_AHEAD_POINTS = 12;
const SpanUntil = z
  .enum(['end', 'infraction', 'command_change'])
  .optional()
  .describe(
    "when to stop before `ticks` besides the route's end: 'end' (only then, the default), 'infraction' (at a new infraction), 'command_change' (when the navigation command changes)",
  );
type SpanStop = 'end' | 'infraction' | 'command_change';

export class Bench2DriveEnv implements Env {
  /** The tools every Bench2Drive session has; static, so listings and MCP hosts know them before any session exists. */
  static readonly TOOLS: readonly EnvTool<never>[] = [
    defineTool({
      name: 'drive',
      description:
        'Advance the route one 0.05 s tick with throttle [0,1], steer [-1,1] (positive right) and brake [0,1]. Returns reward, terminated, truncated, route completion, penalty, status and new infractions.',
      inputSchema: z.object({ throttle: z.number().min(0).max(1), steer: z.number().min(-1).max(1), brake: z.number().min(0).max(1) }).strict(),
      handler: async (a, ctx) => {
        const env = ctx.env as Bench2DriveEnv;
        if (env.kwargs.action_type === 'waypoints')
          throw new InvalidActionError('this env was made with action_type "waypoints"; drive takes controls only with the default action type');
        // Through the wrapped env, so the registry's wrappers (order, limits) see the step.
        const r = await ctx.wrapped.step(Tensor.from('float32', [3], [a.throttle, a.steer, a.brake]));
        return {
          reward: r.reward,
          terminated: r.terminated,
          truncated: r.truncated,
          route_completion: r.info['route_completion'],
          infraction_penalty: r.info['infraction_penalty'],
          status: r.info['status'],
          new_infractions: r.info['new_infractions'],
          speed: env.world!.ego.v,
        };
      },
    }),
    defineTool({
      name: 'get_command',
      description: 'The current navigation command (RoadOption code and name, near and far) and the target point in the ego frame (x forward, y left, metres).',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => {
        const env = ctx.env as Bench2DriveEnv;
        if (!env.world) throw new InvalidActionError('call reset first');
        const c = env.planner.current();
        const tp = env.egoFrame(c.target);
        return {
          command: c.near,
          command_name: ROAD_OPTION_NAMES[c.near] ?? 'VOID',
          command_far: c.far,
          command_far_name: ROAD_OPTION_NAMES[c.far] ?? 'VOID',
          target_point: tp,
          distance_m: Math.hypot(tp[0], tp[1]),
        };
      },
    }),
    defineTool({
      name: 'get_route_info',
      description:
        'The route: id, scenario type and abilities, town, length, speed limit, 2 m waypoints [x, y, option], the downsampled global plan, and progress so far.',
      inputSchema: z.object({}).strict(),
      handler: (_args, ctx) => {
        const env = ctx.env as Bench2DriveEnv;
        if (!env.world) throw new InvalidActionError('call reset first');
        return {
          ...env.routeInfo(),
          route_completion: env.world.completion.percentage,
          infraction_penalty: env.world.penalty(),
          status: env.world.status,
        };
      },
    }),
    defineTool({
      name: 'drive_for',
      description:
        'Hold throttle [0,1], steer [-1,1] (positive right) and brake [0,1] for up to `ticks` 0.05 s ticks, stopping early when the route ends or, as `until` asks, at a new infraction or a change of navigation command. Returns the span summary: ticks run, summed reward, why it stopped, infractions, route completion, speed, the next command with its target point, and the route ahead (12 points 2 m apart, ego frame).',
      inputSchema: z
        .object({
          throttle: z.number().min(0).max(1).describe('throttle, 0 to 1'),
          steer: z.number().min(-1).max(1).describe('steer, -1 (left) to 1 (right)'),
          brake: z.number().min(0).max(1).describe('brake, 0 to 1'),
          ticks: z.number().int().min(1).max(MAX_SPAN_TICKS).describe(`how many 0.05 s ticks to hold the controls, 1 to ${MAX_SPAN_TICKS}`),
          until: SpanUntil,
        })
        .strict(),
      handler: async (a, ctx) => {
        const env = ctx.env as Bench2DriveEnv;
        if (env.kwargs.action_type === 'waypoints')
          throw new InvalidActionError('this env was made with action_type "waypoints"; drive_for takes controls only with the default action type');
        const action = Tensor.from('float32', [3], [a.throttle, a.steer, a.brake]);
        return env.runSpan(ctx, a.ticks, a.until ?? 'end', () => action);
      },
    }),
    defineTool({
      name: 'follow_waypoints_for',
      description:
        "Follow a path for up to `ticks` 0.05 s ticks: `waypoints` are [x, y] in the ego frame now (x forward, y left, metres) spaced 0.5 s apart at the speed you want (2 m apart is 4 m/s). They are fixed to the world, and each tick the env's waypoint controller steers along the ones still ahead. Stops early when the route ends, when the path runs out, or as `until` asks. Returns the span summary like drive_for.",
      inputSchema: z
        .object({
          waypoints: z.array(z.array(z.number()).length(2)).min(2).max(64).describe('2 to 64 points [x, y], ego frame, 0.5 s apart'),
          ticks: z.number().int().min(1).max(MAX_SPAN_TICKS).describe(`at most this many 0.05 s ticks, 1 to ${MAX_SPAN_TICKS}`),
          until: SpanUntil,
        })
        .strict(),
      handler: async (a, ctx) => {
        const env = ctx.env as Bench2DriveEnv;
        if (!env.world) throw new InvalidActionError('call reset first');
        const ego = env.world.ego;
        const c = Math.cos(ego.yaw);
        const s = Math.sin(ego.yaw);
        const path = a.waypoints.map(([x, y]) => ({ x: ego.x + c * x! - s * y!, y: ego.y + s * x! + c * y! }));
        return env.runSpan(ctx, a.ticks, a.until ?? 'end', () => {
          // The points still ahead, in the ego frame now; the span ends when fewer than two remain.
          const ahead = path.map((p) => env.egoFrame(p)).filter(([x]) => x > 0.5);
          if (ahead.length < 2) return null;
          if (env.kwargs.action_type === 'waypoints') {
            const padded = Array.from({ length: WAYPOINTS }, (_, i) => ahead[Math.min(i, ahead.length - 1)]!);
            return Tensor.from('float32', [WAYPOINTS, 2], padded.flat());
          }
          const u = env.pid.control(ahead, env.world!.ego.v, env.egoFrame(env.planner.current().target));
          return Tensor.from('float32', [3], [u.throttle, u.steer, u.brake]);
        });
      },
    }),
  ];

  /**
   * Steps through the wrapped env (so limits apply) until `ticks` ran, the route ended, `next`
   * has no action left, or the `until` event; sums what one step would report.
   */
  private async runSpan(ctx: ToolContext, ticks: number, until: SpanStop, next: () => Tensor | null): Promise<Record<string, Value>> {
    if (!this.world) throw new InvalidActionError('call reset first');
    const startCommand = this.planner.current().near;
    const infractions: Value[] = [];
    let reward = 0;
    let ran = 0;
    let terminated = false;
    let truncated = false;
    let stopped: string = 'ticks';
    while (ran < ticks) {
      const action = next();
      if (!action) {
        stopped = 'path_end';
        break;
      }
      const r = await ctx.wrapped.step(action);
      ran++;
      reward += r.reward;
      const fresh = (r.info['new_infractions'] as Value[] | undefined) ?? [];
      infractions.push(...fresh);
      if (r.terminated || r.truncated) {
        terminated = r.terminated;
        truncated = r.truncated;
        stopped = terminated ? 'terminated' : 'truncated';
        break;
      }
      if (until === 'infraction' && fresh.length > 0) {
        stopped = 'infraction';
        break;
      }
      if (until === 'command_change' && this.planner.current().near !== startCommand) {
        stopped = 'command_change';
        break;
      }
    }
    const world = this.world;
    const c = this.planner.current();
    const target = this.egoFrame(c.target);
    return {
      ticks: ran,
      reward,
      terminated,
      truncated,
      stopped,
      new_infractions: infractions,
      route_completion: world.completion.percentage,
      infraction_penalty: world.penalty(),
      status: world.status,
      speed: world.ego.v,
      command: ROAD_OPTION_NAMES[c.near] ?? 'VOID',
      target_point: target,
      route_ahead: this.routeAhead(ROUTE_AHEAD_POINTS),
    };
  }

  /** The next `n` route points past the ego, 2 m apart, in the ego frame: a path to follow. */
  private routeAhead(n: number): [number, number][] {
    const w = this.world!;
    const points = w.route.points;
    let nearest = 0;
    let best = Infinity;
    for (let i = 0; i < points.length; i++) {
      const d = Math.hypot(points[i]!.x - w.ego.x, points[i]!.y - w.ego.y);
      if (d < best) {
        best = d;
        nearest = i;
      }
    }
    const out: [number, number][] = [];
    for (let i = nearest + 2; i < points.length && out.length < n; i += 2) {
      const [x, y] = this.egoFrame(points[i]!);
      out.push([Math.round(x * 100) / 100, Math.round(y * 100) / 100]);
    }
    return out;
  }

  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: EnvMetadata;
  readonly renderMode: 'rgb_array' | null;
  /** One tick per step: the route's tick budget truncates the episode (TickRuntime). */
  readonly maxEpisodeSteps = MAX_TICKS;
  get tools(): readonly EnvTool<never>[] {
    return Bench2DriveEnv.TOOLS;
  }

  private readonly kwargs: Bench2DriveKwargs;
  private readonly rng = new Random();
  private readonly scenarios = new Map<string, Scenario>();
  private readonly grids = new Map<string, SemanticGrid>();
  private readonly rig: CameraRig | null;
  private world: World | null = null;
  private planner = new RoutePlanner(4.0, 50.0);
  private pid: WaypointController;
  private prevR = 0;
  private finished = false;
  private finalStatus: string | null = null;
  /** The cameras, whether this env renders them (rig) or leaves them to a render pool. */
  readonly cameras: readonly CameraSpec[];
  /** With external cameras: what the last observation's images must show (see lastCameraInput). */
  private cameraInput: RenderInput | null = null;

  /**
   * `externalCameras`: leave the images out of observations (`rgb` holds null) for a wrapper that
   * renders them elsewhere from lastCameraInput(), such as PooledCameras on a render thread.
   */
  constructor(kwargs: Bench2DriveKwargs = {}, opts: { externalCameras?: boolean } = {}) {
    this.kwargs = Bench2DriveKwargsSchema.parse(kwargs);
    this.renderMode = this.kwargs.render_mode ?? null;
    const camNames = this.kwargs.cameras === true ? CAMERA_NAMES : this.kwargs.cameras ? this.kwargs.cameras : [];
    const W = this.kwargs.camera_width ?? 1600;
    const H = this.kwargs.camera_height ?? 900;
    this.cameras = camNames.length ? bench2driveCameras(W, H, camNames) : [];
    this.rig = this.cameras.length && !opts.externalCameras ? new CameraRig(this.cameras) : null;
    const f32 = (shape: number[], low = -Infinity, high = Infinity) => box({ low, high, shape, dtype: 'float32' });
    const spaces: Record<string, Space> = {
      speed: f32([1], 0),
      imu: f32([7]),
      gnss: box({ low: -Infinity, high: Infinity, shape: [3], dtype: 'float64' }),
      position: f32([2]),
      compass: f32([1]),
      target_point: f32([2]),
      command: discrete(8, -1),
      command_far: discrete(8, -1),
    };
    if (this.cameras.length) spaces['rgb'] = dict(Object.fromEntries(camNames.map((n) => [n, box({ low: 0, high: 255, shape: [H, W, 3], dtype: 'uint8' })])));
    if (this.kwargs.lidar) spaces['lidar'] = sequence(f32([4]), true);
    this.observationSpace = dict(spaces);
    this.actionSpace =
      this.kwargs.action_type === 'waypoints'
        ? box({ low: -100, high: 100, shape: [WAYPOINTS, 2], dtype: 'float32' })
        : box({ low: [0, -1, 0], high: [1, 1, 1], dtype: 'float32' });
    this.metadata = {
      render_modes: ['rgb_array'],
      render_fps: 20,
      benchmark: 'Bench2Drive v0.0.4 rules (CARLA leaderboard 2.0 criteria), synthetic world',
      dt: DT,
      max_ticks: MAX_TICKS,
      routes: [...(this.kwargs.routes === 'dev' ? DEV_ROUTE_IDS : ROUTE_IDS)],
      cameras: camNames.length ? [...camNames] : [],
      synthetic_render: true,
      action:
        this.kwargs.action_type === 'waypoints'
          ? `six ego-frame waypoints (x forward, y left) 0.5 s apart -> ${WAYPOINT_CONTROLLERS[this.kwargs.waypoint_controller ?? 'bench2drive'].source}`
          : '[throttle 0..1, steer -1..1 (positive right, as CARLA), brake 0..1]',
    };
    this.pid = this.newController();
  }

  private newController(): WaypointController {
    return new WaypointController(this.kwargs.waypoint_controller ?? 'bench2drive');
  }

  private scenario(id: string): Scenario {
    let sc = this.scenarios.get(id);
    if (!sc) {
      const { type, index } = parseRouteId(id);
      sc = buildScenario(type, index);
      this.scenarios.set(id, sc);
    }
    return sc;
  }

  private newWorld(routeId: string): World {
    return new World(this.scenario(routeId), this.kwargs.background_vehicles !== undefined ? { backgroundVehicles: this.kwargs.background_vehicles } : {});
  }

  reset(opts: ResetOptions = {}): ResetResult {
    if (opts.seed != null) this.rng.seed(opts.seed);
    const pool = this.kwargs.routes === 'dev' ? DEV_ROUTE_IDS : ROUTE_IDS;
    let routeId = this.kwargs.route ?? pool[this.rng.integer(0, pool.length)]!;
    const requested = opts.options?.['route_id'];
    if (requested !== undefined && requested !== null) {
      if (typeof requested !== 'string' || !ROUTE_IDS.includes(requested))
        throw new InvalidOptionsError(`unknown route_id ${JSON.stringify(requested)}; valid routes: ${ROUTE_IDS.join(', ')}`);
      routeId = requested;
    }
    const unknown = Object.keys(opts.options ?? {}).filter((k) => k !== 'route_id');
    if (unknown.length) throw new InvalidOptionsError(`unknown reset options ${unknown.join(', ')}; Bench2Drive-v0 takes {route_id}`);
    this.world = this.newWorld(routeId);
    this.planner = new RoutePlanner(4.0, 50.0);
    this.planner.setRoute(this.world.route.plan);
    this.pid = this.newController();
    this.prevR = 0;
    this.finished = false;
    this.finalStatus = null;
    const info = this.info([]);
    info['route'] = this.routeInfo();
    return { obs: this.observe(), info };
  }

  /** Parses and validates an action into a control; throws before anything changes. */
  private parseAction(action: unknown): Control {
    if (!this.world) throw new InvalidActionError('call reset before step');
    let values: number[];
    if (action instanceof Tensor) values = Array.from(action.toNumbers() as number[]);
    else if (Array.isArray(action)) values = (action as unknown[]).flat(2) as number[];
    else if (ArrayBuffer.isView(action)) values = Array.from(action as unknown as ArrayLike<number>);
    else throw new InvalidActionError(`expected a float32 tensor, got ${typeof action}`);
    if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v))) throw new InvalidActionError('action contains NaN, Infinity or a non-number');
    if (this.kwargs.action_type === 'waypoints') {
      if (values.length !== WAYPOINTS * 2)
        throw new InvalidActionError(
          `expected ${WAYPOINTS} waypoints [${WAYPOINTS}, 2] (x forward, y left, metres, 0.5 s apart), got ${values.length} numbers`,
        );
      if (values.some((v) => Math.abs(v) > 100)) throw new InvalidActionError('waypoints must lie within 100 m of the ego');
      const wps = Array.from({ length: WAYPOINTS }, (_, i) => [values[2 * i]!, values[2 * i + 1]!] as const);
      // The target point the agent saw with its last observation (the ego has not moved since).
      return this.pid.control(wps, this.world.ego.v, this.egoFrame(this.planner.current().target));
    }
    if (values.length !== 3) throw new InvalidActionError(`expected [throttle, steer, brake], got ${values.length} numbers`);
    const [throttle, steer, brake] = values as [number, number, number];
    if (throttle < 0 || throttle > 1) throw new InvalidActionError(`throttle ${throttle} is outside [0, 1]`);
    if (steer < -1 || steer > 1) throw new InvalidActionError(`steer ${steer} is outside [-1, 1]`);
    if (brake < 0 || brake > 1) throw new InvalidActionError(`brake ${brake} is outside [0, 1]`);
    return { throttle, steer, brake };
  }

  step(action: unknown): StepResult {
    const control = this.parseAction(action);
    const world = this.world!;
    if (this.finished) throw new InvalidActionError('the route has ended; call reset');
    const r = world.step(control);
    const R = world.completion.percentage;
    const P = world.penalty();
    let reward = (R - this.prevR) * P;
    for (const e of r.events) reward -= 1 - penaltyFactor(e);
    this.prevR = R;
    const truncated = r.status === 'tickRuntime';
    const terminated = r.done && !truncated;
    this.finished = r.done;
    const info = this.info(r.events.map((e) => ({ type: e.type, ...entry(e) })));
    if (r.done) {
      info['record'] = world.record() as unknown as Info;
      info['comfort'] = world.comfort();
    }
    return { obs: this.observe(), reward, terminated, truncated, info };
  }

  private command() {
    const w = this.world!;
    this.planner.runStep(w.ego.x, w.ego.y);
    return this.planner.current();
  }

  private egoFrame(p: { x: number; y: number }): [number, number] {
    const e = this.world!.ego;
    const dx = p.x - e.x,
      dy = p.y - e.y;
    const c = Math.cos(e.yaw),
      s = Math.sin(e.yaw);
    return [c * dx + s * dy, -s * dx + c * dy];
  }

  private renderInput() {
    const w = this.world!;
    const key = w.scenario.routeId;
    let grid = this.grids.get(key);
    if (!grid) {
      grid = SemanticGrid.fromMap(w.scenario.town.map);
      this.grids.set(key, grid);
    }
    const boxes: RenderBox[] = w.actors
      .filter((a) => a.alive)
      .map((a) => ({
        x: a.x,
        y: a.y,
        heading: a.yaw,
        length: a.length,
        width: a.width,
        height: a.kind === 'pedestrian' ? 1.8 : a.kind === 'static' ? 1.0 : a.kind === 'bicycle' ? 1.6 : 1.6,
        type: a.kind === 'static' ? 'traffic_cone' : a.kind,
      }));
    return {
      grid,
      ego: { x: w.ego.x, y: w.ego.y, heading: w.ego.yaw },
      boxes,
      egoBox: { x: w.ego.x, y: w.ego.y, heading: w.ego.yaw, length: EGO.length, width: EGO.width, height: 1.5, type: 'ego' as const },
    };
  }

  private observe(): Record<string, unknown> {
    const w = this.world!;
    const e = w.ego;
    const cmd = this.command();
    const obs: Record<string, unknown> = {
      speed: Tensor.from('float32', [1], [e.v]),
      imu: Tensor.from('float32', [7], [e.aLon, e.aLat, 9.81, 0, 0, e.yawRate, e.yaw]),
      gnss: Tensor.from('float64', [3], toGnss(e.x, e.y)),
      position: Tensor.from('float32', [2], [e.x, e.y]),
      compass: Tensor.from('float32', [1], [e.yaw]),
      target_point: Tensor.from('float32', [2], this.egoFrame(cmd.target)),
      command: cmd.near,
      command_far: cmd.far,
    };
    if (this.cameras.length || this.kwargs.lidar) {
      const input = this.renderInput();
      if (this.rig) {
        const imgs = this.rig.render(input);
        obs['rgb'] = Object.fromEntries(this.rig.cameras.map((c, i) => [c.name, new Tensor('uint8', [c.height, c.width, 3], imgs[i]!)]));
      } else if (this.cameras.length) {
        // Filled in by the wrapper that renders the cameras; the key keeps its place in the map.
        obs['rgb'] = null;
        this.cameraInput = { grid: input.grid, ego: input.ego, boxes: input.boxes };
      }
      if (this.kwargs.lidar) {
        const { data, n } = castLidar(input, { channels: 32, azimuthSteps: 360, x: -0.39, y: 0, z: 1.84, range: 85 });
        const out = new Float32Array(n * 4);
        for (let i = 0; i < n; i++) for (let r = 0; r < 4; r++) out[i * 4 + r] = data[r * n + i]!;
        obs['lidar'] = new Tensor('float32', [n, 4], out);
      }
    }
    return obs;
  }

  private info(newInfractions: Info[]): Info {
    const w = this.world!;
    const infractions: Record<string, InfractionEntry[]> = {};
    for (const k of ALL_INFRACTION_KEYS) infractions[k] = [];
    for (const ev of w.allEvents()) {
      const key = INFRACTION_KEYS[ev.type];
      if (key) infractions[key]!.push(entry(ev));
    }
    if (w.status === 'timeout') infractions['route_timeout']!.push({ message: 'Route timeout.', time: w.time, frame: w.tick, x: w.ego.x, y: w.ego.y });
    const R = w.completion.percentage;
    const P = w.penalty();
    const status = w.status === 'running' ? 'Running' : (this.finalStatus ?? (this.finalStatus = w.record().status));
    const k = w.metric.length / 8 - 1;
    const info: Info = {
      route_id: w.scenario.routeId,
      scenario_type: w.scenario.scenarioType,
      town: w.scenario.town.name,
      abilities: abilitiesOf(w.scenario.scenarioType),
      tick: w.tick,
      time: w.time,
      route_completion: R,
      infraction_penalty: P,
      driving_score: R * P,
      status,
      infractions: infractions as unknown as Info,
      new_infractions: newInfractions,
      min_speed_checkpoints: w.minSpeed.events.map((e) => e.percentage ?? 0),
      metric_info: k >= 0 ? (w.metricInfo(k) as unknown as Info) : null,
      light_state: w.scenario.town.lights.length ? w.lights.state(1) : null,
    };
    if (this.kwargs.privileged) info['privileged'] = privilegedView(w) as unknown as Info;
    return info;
  }

  private routeInfo(): Info {
    const w = this.world!;
    const r = w.route;
    const every2 = r.points.filter((_, i) => i % 2 === 0 || i === r.points.length - 1);
    return {
      route_id: w.scenario.routeId,
      scenario_type: w.scenario.scenarioType,
      abilities: abilitiesOf(w.scenario.scenarioType),
      town: w.scenario.town.name,
      length_m: r.length,
      speed_limit_mps: r.speedLimit,
      waypoints: every2.map((p) => [p.x, p.y, p.option]),
      global_plan: r.plan.map((p: RoutePoint) => [p.x, p.y, p.option]),
      junction_completion: r.junctionCompletion,
      route_timeout_s: w.timeout,
    };
  }

  /** The scene the last observation's camera images show (external cameras only; null before reset). */
  lastCameraInput(): RenderInput | null {
    return this.cameraInput;
  }

  /** The scene as it is now, for render(): null before reset. */
  currentCameraInput(): RenderInput | null {
    if (!this.world) return null;
    const input = this.renderInput();
    return { grid: input.grid, ego: input.ego, boxes: input.boxes };
  }

  /** A top-down frame: the front camera when cameras are on, else a 256x256 BEV-like view. */
  render(): Tensor | null {
    if (this.renderMode !== 'rgb_array' || !this.world) return null;
    const input = this.renderInput();
    const rig = this.rig ?? new CameraRig(bench2driveCameras(320, 180, ['CAM_FRONT']));
    const img = rig.render({ ...input, boxes: input.boxes })[0]!;
    const cam = rig.cameras[0]!;
    return new Tensor('uint8', [cam.height, cam.width, 3], img);
  }

  close(): void {
    this.world = null;
  }

  getState(): Uint8Array {
    if (!this.world) return packState('Bench2Drive-v0', null);
    return packState('Bench2Drive-v0', {
      route: this.world.scenario.routeId,
      world: snapshotWorld(this.world),
      planner: this.planner.snapshot(),
      pid: [this.pid.turn.state, this.pid.speed.state],
      prevR: this.prevR,
      finished: this.finished,
      rng: this.rng.getState(),
    });
  }

  setState(bytes: Uint8Array): void {
    const s = unpackState<{
      route: string;
      world: Record<string, unknown>;
      planner: RoutePoint[];
      pid: [number[], number[]];
      prevR: number;
      finished: boolean;
      rng: number[];
    } | null>('Bench2Drive-v0', bytes);
    if (!s) {
      this.world = null;
      return;
    }
    const w = this.newWorld(s.route);
    restoreWorld(w, s.world);
    this.world = w;
    this.planner = new RoutePlanner(4.0, 50.0);
    this.planner.setRoute(s.planner);
    this.pid = this.newController();
    this.pid.turn.state = s.pid[0];
    this.pid.speed.state = s.pid[1];
    this.prevR = s.prevR;
    this.finished = s.finished;
    this.finalStatus = null;
    this.rng.setState(s.rng);
  }
}

function entry(e: { message: string; time: number; frame: number; x: number; y: number }): InfractionEntry {
  return { message: e.message, time: e.time, frame: e.frame, x: e.x, y: e.y };
}
