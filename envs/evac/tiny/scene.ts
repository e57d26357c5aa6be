/**
 * The tiny tabletop that the bundled world model draws, in plain TypeScript: geometry, colours, the
 * pose integration rule of its action adapter, a reference renderer (used to make the reset
 * dataset's first frames and to check the ONNX graph), and the block read-out that both the graph
 * and the scripted policy use.
 *
 * A frame is two stacked camera views of the same scene. The top half looks down on the table
 * (columns = x, rows = y); the bottom half looks at it from the front (columns = x, rows = height).
 * Geometry is written in units of the 64-pixel grid and multiplied by `s = H / 64`, so 128 and 256
 * frames show the same scene at a finer scale. The block is drawn last in both views, so its red
 * pixels are never hidden and its position can be read back from a frame exactly.
 */

export const GRID = 64;
/** Pixels (in 64-grid units) per metre of end-effector motion. */
export const PX_PER_M = 64;
export const TABLE_ROW = 60;
export const BLOCK_HALF = 3;
/** Height (grid units) of a resting block's centre above the table. */
export const REST_Z = 3;
/** Grid units within which (on every axis) a closed gripper holds the block. */
export const GRASP_TOL = 2.5;
/** Block height (grid units) above which the reward classifier says success. */
export const LIFT_Z = 10;

export const WORKSPACE = { low: [-0.4, -0.18, 0.04], high: [0.4, 0.18, 0.35] } as const;
/** Metres (xyz) and radians (rpy) per unit of normalised delta action. */
export const POS_STEP = 0.02;
export const ROT_STEP = 0.05;

export const COLORS = {
  wood: [185, 150, 105],
  sky: [200, 210, 225],
  tableFront: [120, 85, 50],
  gripper: [70, 70, 80],
  block: [200, 40, 40],
} as const;

/**
 * Red-block pixel test, shared by the graphs and the JS read-out: green below 55. The block's green
 * is 40, the next lowest (the gripper's) 70; the noise shifts every colour of a frame by the same
 * round(2 x noise) levels, so a frame is misread only past 7.5 standard deviations.
 */
export const BLOCK_MASK = { gMax: 55 } as const;

export interface TinyState {
  /** End-effector position in metres. */
  ee: [number, number, number];
  gripperClosed: boolean;
  /** Block centre in grid units: column, top-view row, height above the table. */
  block: [number, number, number];
}

export function eeToGrid(ee: readonly number[]): [number, number, number] {
  return [GRID / 2 + PX_PER_M * ee[0]!, GRID / 4 + PX_PER_M * ee[1]!, PX_PER_M * ee[2]!];
}

/** Renders one frame of `size`x`size` RGB; the same drawing as the ONNX world model (no noise). */
export function renderTiny(state: TinyState, size: number): Uint8Array {
  const s = size / GRID;
  const H = size;
  const W = size;
  const img = new Uint8Array(H * W * 3);
  for (let r = 0; r < H; r++) {
    const c = r < H / 2 ? COLORS.wood : r + 0.5 < TABLE_ROW * s ? COLORS.sky : COLORS.tableFront;
    for (let x = 0; x < W; x++) img.set(c, (r * W + x) * 3);
  }
  const box = (x0: number, x1: number, y0: number, y1: number, color: readonly number[], rowMax = H) => {
    for (let r = 0; r < rowMax; r++) {
      const rc = r + 0.5;
      if (!(rc >= y0 && rc < y1)) continue;
      for (let x = 0; x < W; x++) {
        const xc = x + 0.5;
        if (xc >= x0 && xc < x1) img.set(color, (r * W + x) * 3);
      }
    }
  };
  const [ex, ey, ez] = eeToGrid(state.ee).map((v) => v * s) as [number, number, number];
  const [bx, by, bz] = state.block.map((v) => v * s) as [number, number, number];
  // Top view: the gripper grows as it rises (nearer the camera); an open gripper is a ring.
  const half = 2.5 * s + ez * (10 / PX_PER_M);
  box(ex - half, ex + half, ey - half, ey + half, COLORS.gripper, H / 2);
  if (!state.gripperClosed) box(ex - half + 1.5 * s, ex + half - 1.5 * s, ey - half + 1.5 * s, ey + half - 1.5 * s, COLORS.wood, H / 2);
  box(bx - BLOCK_HALF * s, bx + BLOCK_HALF * s, by - BLOCK_HALF * s, by + BLOCK_HALF * s, COLORS.block, H / 2);
  // Front view: arm, palm and two fingers around the grasp point.
  const fr = TABLE_ROW * s - ez;
  const off = (state.gripperClosed ? 4 : 6) * s;
  box(ex - s, ex + s, H / 2, fr - 5 * s, COLORS.gripper);
  box(ex - off - s, ex + off + s, fr - 5 * s, fr - 4 * s, COLORS.gripper);
  box(ex - off - s, ex - off + s, fr - 4 * s, fr + 3 * s, COLORS.gripper);
  box(ex + off - s, ex + off + s, fr - 4 * s, fr + 3 * s, COLORS.gripper);
  const br = TABLE_ROW * s - bz;
  box(bx - BLOCK_HALF * s, bx + BLOCK_HALF * s, br - BLOCK_HALF * s, br + BLOCK_HALF * s, COLORS.block);
  return img;
}

/**
 * Reads the block's position (grid units: column, top-view row, height) from a frame, as the world
 * model does; null when no block is visible.
 */
export function locateBlock(frame: Uint8Array, size: number): [number, number, number] | null {
  const s = size / GRID;
  let nTop = 0;
  let sx = 0;
  let sy = 0;
  let nFront = 0;
  let sr = 0;
  for (let r = 0; r < size; r++) {
    for (let x = 0; x < size; x++) {
      const o = (r * size + x) * 3;
      if (frame[o + 1]! < BLOCK_MASK.gMax) {
        if (r < size / 2) {
          nTop++;
          sx += x + 0.5;
          sy += r + 0.5;
        } else {
          nFront++;
          sr += r + 0.5;
        }
      }
    }
  }
  if (nTop === 0 || nFront === 0) return null;
  return [sx / nTop / s, sy / nTop / s, TABLE_ROW - sr / nFront / s];
}

/** Converts a grid-unit block position to metres (the end-effector frame). */
export function gridToMetres(p: readonly number[]): [number, number, number] {
  return [(p[0]! - GRID / 2) / PX_PER_M, (p[1]! - GRID / 4) / PX_PER_M, p[2]! / PX_PER_M];
}

function quatFromRpy(r: number, p: number, y: number): [number, number, number, number] {
  const cr = Math.cos(r / 2);
  const sr = Math.sin(r / 2);
  const cp = Math.cos(p / 2);
  const sp = Math.sin(p / 2);
  const cy = Math.cos(y / 2);
  const sy = Math.sin(y / 2);
  return [sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy];
}

/** Hamilton product of xyzw quaternions. */
export function quatMul(a: readonly number[], b: readonly number[]): [number, number, number, number] {
  const [ax, ay, az, aw] = a as [number, number, number, number];
  const [bx, by, bz, bw] = b as [number, number, number, number];
  return [
    aw * bx + ax * bw + ay * bz - az * by,
    aw * by - ax * bz + ay * bw + az * bx,
    aw * bz + ax * by - ay * bx + az * bw,
    aw * bw - ax * bx - ay * by - az * bz,
  ];
}

/**
 * The tiny action adapter's rule, EVAC's ActionPredictor in closed form: position += POS_STEP x delta
 * (clipped to the workspace), orientation composed with the rotation of ROT_STEP x delta-rpy,
 * gripper = the commanded value (-1 open, +1 closed). Pose is [x, y, z, qx, qy, qz, qw, gripper].
 */
export function integratePose(pose: readonly number[], delta: readonly number[]): number[] {
  const pos = [0, 1, 2].map((i) => Math.min(WORKSPACE.high[i]!, Math.max(WORKSPACE.low[i]!, pose[i]! + POS_STEP * delta[i]!)));
  const q = quatMul(pose.slice(3, 7), quatFromRpy(ROT_STEP * delta[3]!, ROT_STEP * delta[4]!, ROT_STEP * delta[5]!));
  const n = Math.hypot(...q);
  return [...pos, ...q.map((v) => v / n), Math.min(1, Math.max(-1, delta[6]!))];
}
