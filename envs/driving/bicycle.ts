/**
 * nuPlan/NAVSIM's kinematic bicycle model about the rear axle (`batch_kinematic_bicycle.py`), with
 * its first-order lags on acceleration (0.2 s) and steering angle (0.05 s), forward-Euler integration
 * and |steering| <= pi/3. States are NAVSIM's 11-vector, see {@link S}. The update reproduces the
 * reference code operation for operation (including which state each derivative is taken from), so
 * simulated states match NAVSIM's to rounding.
 *
 * @example
 * const s = initialState({ x: 0, y: 0, heading: 0, vx: 10 });
 * const next = propagate(s, { accel: 1, steeringRate: 0 }, 0.1);
 */
import { principalValue } from './geometry.ts';

/** Index of each entry of the 11-float state (NAVSIM's `StateIndex`). */
export const S = {
  X: 0,
  Y: 1,
  HEADING: 2,
  VX: 3,
  VY: 4,
  AX: 5,
  AY: 6,
  STEERING_ANGLE: 7,
  STEERING_RATE: 8,
  ANGULAR_VELOCITY: 9,
  ANGULAR_ACCELERATION: 10,
} as const;
export const STATE_SIZE = 11;

/** Vehicle geometry relative to the rear axle. */
export interface VehicleParameters {
  width: number;
  /** Rear axle to front bumper. */
  front: number;
  /** Rear axle to rear bumper. */
  rear: number;
  wheelBase: number;
  height: number;
}

/** nuPlan's Chrysler Pacifica (`get_pacifica_parameters`). */
export const PACIFICA: VehicleParameters = { width: 1.1485 * 2.0, front: 4.049, rear: 1.127, wheelBase: 3.089, height: 1.777 };

export interface BicycleOptions {
  vehicle?: VehicleParameters;
  maxSteeringAngle?: number;
  accelTimeConstant?: number;
  steeringTimeConstant?: number;
}

export interface Command {
  accel: number;
  steeringRate: number;
}

/** A state vector from the fields that are known (others 0). */
export function initialState(
  s: Partial<{
    x: number;
    y: number;
    heading: number;
    vx: number;
    vy: number;
    ax: number;
    ay: number;
    steeringAngle: number;
    steeringRate: number;
    angularVelocity: number;
    angularAcceleration: number;
  }>,
): Float64Array {
  return Float64Array.of(
    s.x ?? 0,
    s.y ?? 0,
    s.heading ?? 0,
    s.vx ?? 0,
    s.vy ?? 0,
    s.ax ?? 0,
    s.ay ?? 0,
    s.steeringAngle ?? 0,
    s.steeringRate ?? 0,
    s.angularVelocity ?? 0,
    s.angularAcceleration ?? 0,
  );
}

/**
 * One step of the model: returns the next state (written into `out` when given). `dt` is the step in
 * seconds; NAVSIM's TimePoint arithmetic gives 0.1 s as 100000 * 1e-6.
 */
export function propagate(
  state: Float64Array,
  cmd: Command,
  dt: number,
  opts: BicycleOptions = {},
  out: Float64Array = new Float64Array(STATE_SIZE),
): Float64Array {
  const wheelBase = (opts.vehicle ?? PACIFICA).wheelBase;
  const maxSteer = opts.maxSteeringAngle ?? Math.PI / 3;
  const tauA = opts.accelTimeConstant ?? 0.2;
  const tauD = opts.steeringTimeConstant ?? 0.05;

  const x = state[S.X] as number,
    y = state[S.Y] as number,
    heading = state[S.HEADING] as number;
  const v = state[S.VX] as number,
    accel = state[S.AX] as number,
    steer = state[S.STEERING_ANGLE] as number;
  const angVel = state[S.ANGULAR_VELOCITY] as number;

  // _update_commands: lagged acceleration and steering rate.
  const idealSteer = dt * cmd.steeringRate + steer;
  const updatedAccel = (dt / (dt + tauA)) * (cmd.accel - accel) + accel;
  const updatedSteer = (dt / (dt + tauD)) * (idealSteer - steer) + steer;
  const updatedSteerRate = (updatedSteer - steer) / dt;

  // get_state_dot on the propagating state (steering angle still the old one).
  const xDot = v * Math.cos(heading);
  const yDot = v * Math.sin(heading);
  const headingDot = (v * Math.tan(steer)) / wheelBase;

  out[S.X] = x + xDot * dt;
  out[S.Y] = y + yDot * dt;
  out[S.HEADING] = principalValue(heading + headingDot * dt);
  out[S.VX] = v + updatedAccel * dt;
  out[S.VY] = 0;
  let newSteer = steer + updatedSteerRate * dt;
  if (newSteer > maxSteer) newSteer = maxSteer;
  else if (newSteer < -maxSteer) newSteer = -maxSteer;
  out[S.STEERING_ANGLE] = newSteer;
  const newAngVel = ((out[S.VX] as number) * Math.tan(newSteer)) / wheelBase;
  out[S.ANGULAR_VELOCITY] = newAngVel;
  out[S.AX] = updatedAccel;
  out[S.AY] = 0;
  out[S.ANGULAR_ACCELERATION] = (newAngVel - angVel) / dt;
  out[S.STEERING_RATE] = updatedSteerRate;
  return out;
}
