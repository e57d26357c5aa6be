/**
 * The ego vehicle's dynamics for throttle/steer/brake control (CARLA's `VehicleControl`), on the
 * kinematic bicycle at the centre of gravity (highway-env's form, §4 of the spec): the throttle
 * maps to a drive acceleration that fades with speed, the brake to up to 8 m/s² of deceleration,
 * rolling and air resistance slow the car, the steering angle follows the command through a 0.1 s
 * lag and is limited by speed (lateral acceleration ≤ 7 m/s²), and the car never reverses. Steer
 * follows CARLA's sign: positive turns right. Dimensions are CARLA's Lincoln MKZ 2020.
 *
 * Also here: the PID controllers Bench2Drive's agents use to turn predicted waypoints into controls.
 *
 * @example
 * const s = egoState(0, 0, 0, 5);
 * stepEgo(s, { throttle: 0.5, steer: 0, brake: 0 }, 0.05);
 */

export const EGO = { length: 4.89, width: 2.12, wheelBase: 2.87, maxSteer: 0.61 } as const;
export const DRIVE = { maxAccel: 3.6, vMax: 40, maxBrake: 8.0, roll: 0.15, drag: 0.003, steerLag: 0.1, maxLatAccel: 7.0 } as const;

export interface EgoState {
  x: number;
  y: number;
  yaw: number;
  v: number;
  steerAngle: number;
  /** Longitudinal and lateral acceleration and yaw rate from the last step (IMU). */
  aLon: number;
  aLat: number;
  yawRate: number;
}

export interface Control {
  throttle: number;
  steer: number;
  brake: number;
}

export function egoState(x: number, y: number, yaw: number, v = 0): EgoState {
  return { x, y, yaw, v, steerAngle: 0, aLon: 0, aLat: 0, yawRate: 0 };
}

/** The largest front-wheel angle at speed v. */
export function maxSteerAngle(v: number): number {
  const lim = Math.atan((EGO.wheelBase * DRIVE.maxLatAccel) / Math.max(v * v, 1e-6));
  return Math.min(EGO.maxSteer, lim);
}

/** Drive acceleration available at full throttle at speed v. */
export function driveAccel(v: number): number {
  return DRIVE.maxAccel * Math.max(0, 1 - v / DRIVE.vMax);
}

/** Resistance deceleration at speed v (always ≥ 0). */
export function resistance(v: number): number {
  return v > 0 ? DRIVE.roll + DRIVE.drag * v * v : 0;
}

/** Advances the ego by dt in place. */
export function stepEgo(s: EgoState, c: Control, dt: number): void {
  const target = -c.steer * maxSteerAngle(s.v);
  s.steerAngle += (dt / (dt + DRIVE.steerLag)) * (target - s.steerAngle);
  let a = c.throttle * driveAccel(s.v) - c.brake * DRIVE.maxBrake - resistance(s.v);
  let v = s.v + a * dt;
  if (v < 0) {
    v = 0;
    a = -s.v / dt;
  }
  const vm = 0.5 * (s.v + v);
  const lr = EGO.wheelBase / 2;
  const beta = Math.atan(0.5 * Math.tan(s.steerAngle));
  const yawRate = (vm * Math.sin(beta)) / lr;
  s.x += vm * Math.cos(s.yaw + beta) * dt;
  s.y += vm * Math.sin(s.yaw + beta) * dt;
  s.yaw = Math.atan2(Math.sin(s.yaw + yawRate * dt), Math.cos(s.yaw + yawRate * dt));
  s.v = v;
  s.aLon = a;
  s.aLat = vm * yawRate;
  s.yawRate = yawRate;
}

/** A PID controller over a sliding window of errors, as in Bench2Drive's agents (`PIDController`). */
export class PIDController {
  private window: number[] = [];
  constructor(
    readonly kp: number,
    readonly ki: number,
    readonly kd: number,
    readonly n = 20,
  ) {}
  step(error: number): number {
    this.window.push(error);
    if (this.window.length > this.n) this.window.shift();
    let integral = 0;
    let derivative = 0;
    if (this.window.length >= 2) {
      integral = this.window.reduce((a, b) => a + b, 0) / this.window.length;
      derivative = this.window[this.window.length - 1]! - this.window[this.window.length - 2]!;
    }
    return this.kp * error + this.ki * integral + this.kd * derivative;
  }
  reset(): void {
    this.window = [];
  }
  get state(): number[] {
    return this.window.slice();
  }
  set state(w: number[]) {
    this.window = w.slice();
  }
}

/**
 * Bench2Drive's `control_pid` (UniAD/VAD agents, TCP's constants): waypoints are ego-frame points
 * (x forward, y left) 0.5 s apart; desired speed = 2 × distance between the first two; brake when
 * it is below 0.4 m/s or the ego is 10 % faster; aim at the midpoint of the first two; throttle
 * from a speed PID on the error clipped to 0.25 m/s, at most 0.75.
 */
export class WaypointController {
  readonly turn = new PIDController(1.25, 0.75, 0.3, 20);
  readonly speed = new PIDController(5.0, 0.5, 1.0, 20);
  control(waypoints: readonly (readonly [number, number])[], speed: number): Control {
    const w0 = waypoints[0] ?? [0, 0];
    const w1 = waypoints[1] ?? w0;
    const desired = Math.hypot(w0[0] - w1[0], w0[1] - w1[1]) * 2.0;
    const brake = desired < 0.4 || speed / Math.max(desired, 1e-6) > 1.1;
    const aimX = (w0[0] + w1[0]) / 2;
    const aimY = (w0[1] + w1[1]) / 2;
    // Angle from straight ahead to the aim point, positive to the right (CARLA's steer sign), / 90°.
    let angle = (Math.atan2(-aimY, aimX) * 180) / Math.PI / 90;
    if (speed < 0.01) angle = 0;
    const steer = Math.max(-1, Math.min(1, this.turn.step(angle)));
    const delta = Math.max(0, Math.min(0.25, desired - speed));
    let throttle = Math.max(0, Math.min(0.75, this.speed.step(delta)));
    if (brake) throttle = 0;
    return { throttle, steer, brake: brake ? 1 : 0 };
  }
}
