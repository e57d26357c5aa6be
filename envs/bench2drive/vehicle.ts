/**
 * The ego vehicle's dynamics for throttle/steer/brake control (CARLA's `VehicleControl`), on the
 * kinematic bicycle at the centre of gravity (highway-env's form, §4 of the spec): the throttle
 * maps to a drive acceleration that fades with speed, the brake to up to 8 m/s² of deceleration,
 * rolling and air resistance slow the car, the steering angle follows the command through a 0.1 s
 * lag and is limited by speed (lateral acceleration ≤ 7 m/s²), and the car never reverses. Steer
 * follows CARLA's sign: positive turns right. Dimensions are CARLA's Lincoln MKZ 2020.
 *
 * The waypoint controllers that turn predicted waypoints into controls live in
 * runtime/waypoint-control.ts (shared with the SDKs) and are re-exported here.
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

// The waypoint controllers (Bench2DriveZoo's and TransFuser's) are shared with the SDK through protocol/.
export { WaypointController, WindowPid } from '../../runtime/waypoint-control.ts';
