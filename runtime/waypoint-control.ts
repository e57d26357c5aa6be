/**
 * Waypoint controllers: predicted ego-frame waypoints to CARLA controls, exactly as the driving
 * benchmarks' reference agents do it. One implementation for the Bench2Drive env (server side) and
 * the TypeScript SDK; the Python SDK mirrors it with these constants (generated into `_protocol.py`).
 *
 * - `bench2drive`: Bench2DriveZoo's `PIDController.control_pid` (`team_code/pid_controller.py`,
 *   used by its UniAD and VAD agents): desired speed = mean distance between consecutive waypoints
 *   / 0.5 s; steer aims at the waypoint whose following segment's midpoint lies nearest 4 m, or at
 *   the route target point when that needs less steering or when the last segment's direction
 *   differs from the target's by more than 0.3 (×90°) with the target under 10 m ahead.
 * - `bench2drive-uniad`: the same, plus UniAD's agent cutting the throttle above 5 m/s.
 * - `transfuser`: TransFuser's `LidarCenterNet.control_pid` (autonomousvision/transfuser, 2022):
 *   desired speed from the first two waypoints, aim at their midpoint, no steering while braking or
 *   standing still.
 *
 * Both PIDs keep a window of the last n errors that starts as n zeros (I = window mean, D = last
 * difference), as the references' `deque([0] * n, maxlen=n)` does. Waypoints are gymwire's ego frame
 * (x forward, y left, metres, 0.5 s apart); steer is positive to the right, as in CARLA.
 *
 * @example
 * const controller = new WaypointController('bench2drive');
 * const { throttle, steer, brake } = controller.control([[2, 0], [4, 0], [6, 0]], 3.5, [20, 0]);
 */

export interface PidGains {
  kp: number;
  ki: number;
  kd: number;
  /** Window length: the integral is the mean of the last n errors. */
  n: number;
}

export interface WaypointControllerConfig {
  /** Which reference formula: Bench2DriveZoo's `control_pid` or TransFuser's. */
  kind: 'bench2drive' | 'transfuser';
  /** Where the constants come from, for docs and error messages. */
  source: string;
  turn: PidGains;
  speed: PidGains;
  maxThrottle: number;
  /** Brake when the desired speed is below this (m/s)... */
  brakeSpeed: number;
  /** ...or when speed / desired speed exceeds this. */
  brakeRatio: number;
  /** The speed error fed to the speed PID is clipped to [0, clipDelta]. */
  clipDelta: number;
  /** Seconds between consecutive waypoints (the references' `* 2.0`). */
  waypointDt: number;
  /** bench2drive only: aim at the waypoint nearest this distance (m). */
  aimDist: number;
  /** bench2drive only: use the target point when its angle differs from the last segment's by more than this... */
  angleThresh: number;
  /** ...and it lies less than this far ahead (m). */
  distThresh: number;
  /** Throttle is cut above this speed (m/s); null: never (UniAD's agent: 5). */
  throttleCutSpeed: number | null;
}

const BENCH2DRIVE: WaypointControllerConfig = {
  kind: 'bench2drive',
  source: 'Bench2DriveZoo team_code/pid_controller.py PIDController.control_pid (UniAD and VAD agents)',
  turn: { kp: 0.75, ki: 0.75, kd: 0.3, n: 40 },
  speed: { kp: 5.0, ki: 0.5, kd: 1.0, n: 40 },
  maxThrottle: 0.75,
  brakeSpeed: 0.4,
  brakeRatio: 1.1,
  clipDelta: 0.25,
  waypointDt: 0.5,
  aimDist: 4.0,
  angleThresh: 0.3,
  distThresh: 10,
  throttleCutSpeed: null,
};

/** The controllers by name; `bench2drive` is the default. */
export const WAYPOINT_CONTROLLERS = {
  bench2drive: BENCH2DRIVE,
  'bench2drive-uniad': {
    ...BENCH2DRIVE,
    source: "Bench2DriveZoo pid_controller.py control_pid with uniad_b2d_agent.py's throttle cut above 5 m/s",
    throttleCutSpeed: 5,
  },
  transfuser: {
    kind: 'transfuser',
    source: 'autonomousvision/transfuser team_code_transfuser/model.py LidarCenterNet.control_pid, constants from config.py',
    turn: { kp: 1.25, ki: 0.75, kd: 0.3, n: 20 },
    speed: { kp: 5.0, ki: 0.5, kd: 1.0, n: 20 },
    maxThrottle: 0.75,
    brakeSpeed: 0.4,
    brakeRatio: 1.1,
    clipDelta: 0.25,
    waypointDt: 0.5,
    aimDist: 0,
    angleThresh: 0,
    distThresh: 0,
    throttleCutSpeed: null,
  },
} as const satisfies Record<string, WaypointControllerConfig>;

export type WaypointControllerName = keyof typeof WAYPOINT_CONTROLLERS;
export const WAYPOINT_CONTROLLER_NAMES = Object.keys(WAYPOINT_CONTROLLERS) as WaypointControllerName[];

export interface WaypointControl {
  throttle: number;
  steer: number;
  brake: number;
}

/** A PID over a window of the last n errors that starts as n zeros (the references' `PID`). */
export class WindowPid {
  private window: number[];
  constructor(readonly gains: PidGains) {
    this.window = new Array<number>(gains.n).fill(0);
  }
  step(error: number): number {
    this.window.push(error);
    if (this.window.length > this.gains.n) this.window.shift();
    let integral = 0;
    let derivative = 0;
    if (this.window.length >= 2) {
      integral = this.window.reduce((a, b) => a + b, 0) / this.window.length;
      derivative = this.window[this.window.length - 1]! - this.window[this.window.length - 2]!;
    }
    return this.gains.kp * error + this.gains.ki * integral + this.gains.kd * derivative;
  }
  reset(): void {
    this.window = new Array<number>(this.gains.n).fill(0);
  }
  get state(): number[] {
    return this.window.slice();
  }
  set state(w: number[]) {
    this.window = w.slice(-this.gains.n);
  }
}

type Point = readonly [number, number] | readonly number[];

const clip = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
const degrees = (rad: number) => (rad * 180) / Math.PI;

/**
 * Turns waypoints into controls with one of {@link WAYPOINT_CONTROLLERS}; keeps the two PIDs'
 * windows, so use one instance per vehicle and episode.
 */
export class WaypointController {
  readonly config: WaypointControllerConfig;
  readonly turn: WindowPid;
  readonly speed: WindowPid;

  constructor(
    readonly controllerName: WaypointControllerName = 'bench2drive',
    overrides: Partial<WaypointControllerConfig> = {},
  ) {
    const base = WAYPOINT_CONTROLLERS[controllerName] as WaypointControllerConfig | undefined;
    if (!base) throw new TypeError(`unknown waypoint controller ${JSON.stringify(controllerName)}; known: ${WAYPOINT_CONTROLLER_NAMES.join(', ')}`);
    this.config = { ...base, ...overrides };
    this.turn = new WindowPid(this.config.turn);
    this.speed = new WindowPid(this.config.speed);
  }

  /**
   * One tick: `waypoints` `[K, 2]` (K >= 2), the ego `speed` in m/s, and for the bench2drive
   * controllers the route `target` point (the `target_point` observation), all in the ego frame.
   */
  control(waypoints: readonly Point[], speed: number, target?: Point): WaypointControl {
    if (waypoints.length < 2) throw new TypeError(`a waypoint controller needs at least 2 waypoints, got ${waypoints.length}`);
    const c = this.config;
    return c.kind === 'bench2drive' ? this.bench2drive(waypoints, speed, target) : this.transfuser(waypoints, speed);
  }

  reset(): void {
    this.turn.reset();
    this.speed.reset();
  }

  private bench2drive(waypoints: readonly Point[], speed: number, target: Point | undefined): WaypointControl {
    const c = this.config;
    if (!target) throw new TypeError(`the ${this.controllerName} waypoint controller needs the route target point (ego frame, the target_point observation)`);
    const pairs = waypoints.length - 1;
    let desired = 0;
    let bestNorm = 1e5;
    let aim = waypoints[0]!;
    for (let i = 0; i < pairs; i++) {
      const a = waypoints[i]!;
      const b = waypoints[i + 1]!;
      desired += Math.hypot(b[0]! - a[0]!, b[1]! - a[1]!) / c.waypointDt / pairs;
      // The reference measures the segment's midpoint but aims at the segment's first waypoint.
      const norm = Math.hypot((a[0]! + b[0]!) / 2, (a[1]! + b[1]!) / 2);
      if (Math.abs(c.aimDist - bestNorm) > Math.abs(c.aimDist - norm)) {
        aim = a;
        bestNorm = norm;
      }
    }
    const last = waypoints[pairs]!;
    const beforeLast = waypoints[pairs - 1]!;
    // The reference's frame is x right, y forward: angle = (90° - atan2(forward, right)) / 90°.
    const angleOf = (p: Point) => degrees(Math.PI / 2 - Math.atan2(p[0]!, -p[1]!)) / 90;
    const angle = angleOf(aim);
    const angleLast = angleOf([last[0]! - beforeLast[0]!, last[1]! - beforeLast[1]!]);
    const angleTarget = angleOf(target);
    const useTarget = Math.abs(angleTarget) < Math.abs(angle) || (Math.abs(angleTarget - angleLast) > c.angleThresh && target[0]! < c.distThresh);
    const steer = clip(this.turn.step(useTarget ? angleTarget : angle), -1, 1);
    const brake = desired < c.brakeSpeed || speed / desired > c.brakeRatio;
    const delta = clip(desired - speed, 0, c.clipDelta);
    let throttle = clip(this.speed.step(delta), 0, c.maxThrottle);
    if (brake) throttle = 0;
    if (c.throttleCutSpeed !== null && speed > c.throttleCutSpeed) throttle = 0;
    return { throttle, steer, brake: brake ? 1 : 0 };
  }

  private transfuser(waypoints: readonly Point[], speed: number): WaypointControl {
    const c = this.config;
    const w0 = waypoints[0]!;
    const w1 = waypoints[1]!;
    const desired = Math.hypot(w0[0]! - w1[0]!, w0[1]! - w1[1]!) / c.waypointDt;
    const brake = desired < c.brakeSpeed || speed / desired > c.brakeRatio;
    const delta = clip(desired - speed, 0, c.clipDelta);
    let throttle = clip(this.speed.step(delta), 0, c.maxThrottle);
    if (brake) throttle = 0;
    // TransFuser's frame is x forward, y right.
    let angle = degrees(Math.atan2(-(w0[1]! + w1[1]!) / 2, (w0[0]! + w1[0]!) / 2)) / 90;
    if (speed < 0.01 || brake) angle = 0;
    const steer = clip(this.turn.step(angle), -1, 1);
    if (c.throttleCutSpeed !== null && speed > c.throttleCutSpeed) throttle = 0;
    return { throttle, steer, brake: brake ? 1 : 0 };
  }
}
