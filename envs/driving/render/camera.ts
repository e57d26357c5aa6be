/**
 * Pinhole cameras for the driving envs: a rig is a list of cameras given by mount position (ego
 * frame: x forward, y left, z up, metres from the rear axle on the ground), yaw, pitch and
 * horizontal field of view, rendered by a pure-TypeScript rasteriser into uint8 RGB images. The
 * ground is flat, so each pixel's ground hit in the ego frame is precomputed once per rig; a frame
 * then costs one semantic-grid lookup per ground pixel plus painter's-order filling of the visible
 * faces of each box (ground can never occlude a box standing on it). Images are synthetic renders.
 *
 * @example
 * const rig = new CameraRig(navsimCameras(256, 144));
 * const images = rig.render({ grid, ego: { x: 0, y: 0, heading: 0 }, boxes }); // Tensor-ready Uint8Arrays
 */
import type { AgentType } from '../agents.ts';
import type { Pose } from '../geometry.ts';
import type { SemanticGrid } from './grid.ts';
import { SEM } from './grid.ts';

export interface CameraSpec {
  name: string;
  /** Mount position in the ego (rear-axle) frame. */
  x: number;
  y: number;
  z: number;
  /** Yaw (left positive) and pitch (up positive) in radians. */
  yaw: number;
  pitch: number;
  /** Horizontal field of view in degrees. */
  fovDeg: number;
  width: number;
  height: number;
}

/** Something to draw: an oriented 3D box on the ground. */
export interface RenderBox {
  x: number;
  y: number;
  heading: number;
  length: number;
  width: number;
  height: number;
  type: AgentType | 'ego';
}

export interface RenderInput {
  grid: SemanticGrid;
  /** The ego rear-axle pose; cameras are mounted relative to it. */
  ego: Pose;
  boxes: readonly RenderBox[];
}

const DEG = Math.PI / 180;

/**
 * NAVSIM's eight cameras (`cam_f0, cam_l0, cam_l1, cam_l2, cam_r0, cam_r1, cam_r2, cam_b0`), with
 * nuPlan-like mounts and fields of view, at the given resolution. The real images are 1920x1080;
 * the default here is downscaled.
 */
export function navsimCameras(width = 256, height = 144): CameraSpec[] {
  const c = (name: string, x: number, y: number, yawDeg: number, fovDeg: number): CameraSpec => ({
    name,
    x,
    y,
    z: 1.8,
    yaw: yawDeg * DEG,
    pitch: 0,
    fovDeg,
    width,
    height,
  });
  return [
    c('cam_f0', 1.7, 0, 0, 64),
    c('cam_l0', 1.5, 0.5, 55, 64),
    c('cam_l1', 0.6, 0.9, 110, 64),
    c('cam_l2', -0.5, 0.6, 145, 64),
    c('cam_r0', 1.5, -0.5, -55, 64),
    c('cam_r1', 0.6, -0.9, -110, 64),
    c('cam_r2', -0.5, -0.6, -145, 64),
    c('cam_b0', -1.0, 0, 180, 64),
  ];
}

/** Intrinsics K (row-major 3x3) for a camera. */
export function intrinsics(cam: CameraSpec): number[] {
  const f = cam.width / 2 / Math.tan((cam.fovDeg * DEG) / 2);
  return [f, 0, cam.width / 2, 0, f, cam.height / 2, 0, 0, 1];
}

/**
 * Sensor-to-ego rotation (row-major 3x3, columns are the camera's x right, y down, z forward axes in
 * the ego frame) and translation, the form of NAVSIM's `sensor2lidar_rotation/translation` (here
 * the LiDAR frame is the ego frame).
 */
export function extrinsics(cam: CameraSpec): { rotation: number[]; translation: number[] } {
  const cy = Math.cos(cam.yaw),
    sy = Math.sin(cam.yaw),
    cp = Math.cos(cam.pitch),
    sp = Math.sin(cam.pitch);
  const fwd = [cp * cy, cp * sy, sp];
  const right = [sy, -cy, 0];
  const down = [sp * cy, sp * sy, -cp];
  return {
    rotation: [right[0], down[0], fwd[0], right[1], down[1], fwd[1], right[2], down[2], fwd[2]] as number[],
    translation: [cam.x, cam.y, cam.z],
  };
}

const SKY_TOP = [110, 150, 205];
const SKY_HORIZON = [190, 205, 220];
const GROUND_COLOURS: Record<number, [number, number, number]> = {
  [SEM.OFFROAD]: [96, 112, 74],
  [SEM.ROAD]: [72, 72, 76],
  [SEM.MARKING]: [225, 225, 225],
  [SEM.CROSSWALK]: [200, 200, 200],
  [SEM.STOP_LINE]: [235, 235, 235],
  [SEM.INTERSECTION]: [78, 78, 82],
};
const BOX_COLOURS: Record<AgentType | 'ego', [number, number, number]> = {
  vehicle: [170, 40, 40],
  pedestrian: [230, 180, 40],
  bicycle: [40, 150, 210],
  traffic_cone: [250, 120, 20],
  barrier: [230, 230, 60],
  czone_sign: [250, 150, 30],
  generic_object: [150, 110, 200],
  ego: [40, 170, 80],
};
const FOG_DISTANCE = 120;

interface PreparedCamera {
  spec: CameraSpec;
  f: number;
  /** Per pixel: ground hit in the ego frame (x, y) or NaN for sky, and hit distance. */
  groundX: Float32Array;
  groundY: Float32Array;
  groundDist: Float32Array;
  /** Per row sky colour. */
  sky: Uint8Array;
  rotation: number[];
}

/**
 * What one camera pixel costs a session, for memory budgets: the precomputed ground ray (3 x
 * float32) plus the rendered image, its encoded answer and the copy the reply cache or a socket
 * write keeps (3 bytes each), with headroom for an answer in flight.
 */
export const CAMERA_BYTES_PER_PIXEL = 24;

/** The memory a rig of these cameras holds while rendering (see CAMERA_BYTES_PER_PIXEL). */
export function cameraRigBytes(cameras: readonly Pick<CameraSpec, 'width' | 'height'>[]): number {
  return cameras.reduce((sum, c) => sum + c.width * c.height * CAMERA_BYTES_PER_PIXEL, 0);
}

/** A camera rig with precomputed ground rays. Reuse it across frames. */
export class CameraRig {
  readonly cameras: readonly CameraSpec[];
  private readonly prepared: PreparedCamera[];

  constructor(cameras: readonly CameraSpec[]) {
    this.cameras = cameras;
    this.prepared = cameras.map((c) => prepare(c));
  }

  /** Renders every camera; each image is uint8 [height, width, 3], row-major. */
  render(input: RenderInput): Uint8Array[] {
    return this.prepared.map((p) => renderCamera(p, input));
  }

  /** Renders one camera by index into `out` (allocated when absent). */
  renderOne(index: number, input: RenderInput, out?: Uint8Array): Uint8Array {
    const p = this.prepared[index];
    if (!p) throw new RangeError(`no camera ${index}`);
    return renderCamera(p, input, out);
  }
}

function prepare(spec: CameraSpec): PreparedCamera {
  const { width: W, height: H } = spec;
  const f = W / 2 / Math.tan((spec.fovDeg * DEG) / 2);
  const { rotation } = extrinsics(spec);
  const groundX = new Float32Array(W * H),
    groundY = new Float32Array(W * H),
    groundDist = new Float32Array(W * H);
  const sky = new Uint8Array(H * 3);
  for (let v = 0; v < H; v++) {
    for (let u = 0; u < W; u++) {
      const dx = (u + 0.5 - W / 2) / f,
        dy = (v + 0.5 - H / 2) / f;
      // Camera (right, down, forward) -> ego.
      const ex = (rotation[0] as number) * dx + (rotation[1] as number) * dy + (rotation[2] as number);
      const ey = (rotation[3] as number) * dx + (rotation[4] as number) * dy + (rotation[5] as number);
      const ez = (rotation[6] as number) * dx + (rotation[7] as number) * dy + (rotation[8] as number);
      const i = v * W + u;
      if (ez < -1e-6) {
        const t = spec.z / -ez;
        groundX[i] = spec.x + t * ex;
        groundY[i] = spec.y + t * ey;
        groundDist[i] = t * Math.hypot(ex, ey, ez);
      } else {
        groundX[i] = NaN;
        groundY[i] = NaN;
        groundDist[i] = Infinity;
      }
    }
    const k = Math.min(1, Math.max(0, v / (H / 2)));
    for (let c = 0; c < 3; c++) sky[v * 3 + c] = Math.round((SKY_TOP[c] as number) * (1 - k) + (SKY_HORIZON[c] as number) * k);
  }
  return { spec, f, groundX, groundY, groundDist, sky, rotation };
}

function renderCamera(p: PreparedCamera, input: RenderInput, out?: Uint8Array): Uint8Array {
  const { width: W, height: H } = p.spec;
  const img = out ?? new Uint8Array(W * H * 3);
  const { grid, ego } = input;
  const c = Math.cos(ego.heading),
    s = Math.sin(ego.heading);
  const fog = SKY_HORIZON;
  for (let i = 0, n = W * H; i < n; i++) {
    const gx = p.groundX[i] as number;
    const o = i * 3;
    if (gx !== gx) {
      const row = ((i / W) | 0) * 3;
      img[o] = p.sky[row] as number;
      img[o + 1] = p.sky[row + 1] as number;
      img[o + 2] = p.sky[row + 2] as number;
      continue;
    }
    const gy = p.groundY[i] as number;
    const wx = ego.x + c * gx - s * gy,
      wy = ego.y + s * gx + c * gy;
    const col = GROUND_COLOURS[grid.classAt(wx, wy)] ?? (GROUND_COLOURS[SEM.OFFROAD] as [number, number, number]);
    const k = Math.min(1, (p.groundDist[i] as number) / FOG_DISTANCE);
    img[o] = col[0] + ((fog[0] as number) - col[0]) * k;
    img[o + 1] = col[1] + ((fog[1] as number) - col[1]) * k;
    img[o + 2] = col[2] + ((fog[2] as number) - col[2]) * k;
  }
  drawBoxes(p, input, img);
  return img;
}

/** Camera-frame coordinates (right, down, forward) of a world point. */
function toCamera(p: PreparedCamera, ego: Pose, wx: number, wy: number, wz: number, out: number[], o: number): void {
  const c = Math.cos(ego.heading),
    s = Math.sin(ego.heading);
  const dx = wx - ego.x,
    dy = wy - ego.y;
  const ex = c * dx + s * dy - p.spec.x,
    ey = -s * dx + c * dy - p.spec.y,
    ez = wz - p.spec.z;
  const R = p.rotation;
  out[o] = (R[0] as number) * ex + (R[3] as number) * ey + (R[6] as number) * ez;
  out[o + 1] = (R[1] as number) * ex + (R[4] as number) * ey + (R[7] as number) * ez;
  out[o + 2] = (R[2] as number) * ex + (R[5] as number) * ey + (R[8] as number) * ez;
}

// Box faces by corner index (0-3 bottom FL, RL, RR, FR; 4-7 top), with outward normals in box frame.
const FACES: [number[], [number, number, number]][] = [
  [
    [0, 3, 7, 4],
    [1, 0, 0],
  ],
  [
    [1, 2, 6, 5],
    [-1, 0, 0],
  ],
  [
    [0, 1, 5, 4],
    [0, 1, 0],
  ],
  [
    [3, 2, 6, 7],
    [0, -1, 0],
  ],
  [
    [4, 5, 6, 7],
    [0, 0, 1],
  ],
];
const LIGHT = [0.4, 0.3, 0.86];
const NEAR = 0.2;

function drawBoxes(p: PreparedCamera, input: RenderInput, img: Uint8Array): void {
  const { ego } = input;
  const camWx = ego.x + Math.cos(ego.heading) * p.spec.x - Math.sin(ego.heading) * p.spec.y;
  const camWy = ego.y + Math.sin(ego.heading) * p.spec.x + Math.cos(ego.heading) * p.spec.y;
  const order = input.boxes
    .map((b, i) => ({ i, d: Math.hypot(b.x - camWx, b.y - camWy) }))
    .filter((e) => e.d < 150)
    .sort((a, b) => b.d - a.d);
  const cam = new Array<number>(24).fill(0);
  const poly: number[] = [];
  for (const { i } of order) {
    const b = input.boxes[i] as RenderBox;
    const cb = Math.cos(b.heading),
      sb = Math.sin(b.heading);
    for (let k = 0; k < 8; k++) {
      const lx = k % 4 === 0 || k % 4 === 3 ? b.length / 2 : -b.length / 2;
      const ly = k % 4 === 0 || k % 4 === 1 ? b.width / 2 : -b.width / 2;
      const z = k < 4 ? 0 : b.height;
      toCamera(p, ego, b.x + cb * lx - sb * ly, b.y + sb * lx + cb * ly, z, cam, 3 * k);
    }
    let allBehind = true;
    for (let k = 0; k < 8; k++) if ((cam[3 * k + 2] as number) > NEAR) allBehind = false;
    if (allBehind) continue;
    const base = BOX_COLOURS[b.type];
    for (const [idx, n] of FACES) {
      // Back-face culling in world space: normal against the view vector to the face centre.
      const nx = cb * n[0] - sb * n[1],
        ny = sb * n[0] + cb * n[1],
        nz = n[2];
      let fx = 0,
        fy = 0,
        fz = 0;
      for (const k of idx) {
        fx += cam[3 * k] as number;
        fy += cam[3 * k + 1] as number;
        fz += cam[3 * k + 2] as number;
      }
      // Normal in camera frame.
      const enx = Math.cos(ego.heading) * nx + Math.sin(ego.heading) * ny,
        eny = -Math.sin(ego.heading) * nx + Math.cos(ego.heading) * ny;
      const R = p.rotation;
      const cnx = (R[0] as number) * enx + (R[3] as number) * eny + (R[6] as number) * nz;
      const cny = (R[1] as number) * enx + (R[4] as number) * eny + (R[7] as number) * nz;
      const cnz = (R[2] as number) * enx + (R[5] as number) * eny + (R[8] as number) * nz;
      if (cnx * fx + cny * fy + cnz * fz >= 0) continue;
      const shade = 0.45 + 0.55 * Math.abs(nx * (LIGHT[0] as number) + ny * (LIGHT[1] as number) + nz * (LIGHT[2] as number));
      poly.length = 0;
      clipNear(
        idx.map((k) => [cam[3 * k] as number, cam[3 * k + 1] as number, cam[3 * k + 2] as number]),
        poly,
        p.f,
        p.spec.width,
        p.spec.height,
      );
      if (poly.length >= 6)
        fillConvex(img, p.spec.width, p.spec.height, poly, Math.round(base[0] * shade), Math.round(base[1] * shade), Math.round(base[2] * shade));
    }
  }
}

/** Clips a camera-frame polygon to z >= NEAR and projects it to pixels (flat x, y list). */
function clipNear(pts: number[][], out: number[], f: number, W: number, H: number): void {
  const n = pts.length;
  for (let i = 0; i < n; i++) {
    const a = pts[i] as number[],
      b = pts[(i + 1) % n] as number[];
    const az = a[2] as number,
      bz = b[2] as number;
    if (az >= NEAR) out.push(((a[0] as number) / az) * f + W / 2, ((a[1] as number) / az) * f + H / 2);
    if (az >= NEAR !== bz >= NEAR) {
      const t = (NEAR - az) / (bz - az);
      const x = (a[0] as number) + t * ((b[0] as number) - (a[0] as number));
      const y = (a[1] as number) + t * ((b[1] as number) - (a[1] as number));
      out.push((x / NEAR) * f + W / 2, (y / NEAR) * f + H / 2);
    }
  }
}

/** Scanline fill of a convex polygon in pixel coordinates (pixel centres inside are painted). */
export function fillConvex(img: Uint8Array, W: number, H: number, poly: number[], r: number, g: number, b: number): void {
  const n = poly.length >> 1;
  let minY = Infinity,
    maxY = -Infinity;
  for (let i = 0; i < n; i++) {
    const y = poly[2 * i + 1] as number;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  const y0 = Math.max(0, Math.ceil(minY - 0.5)),
    y1 = Math.min(H - 1, Math.floor(maxY - 0.5));
  for (let y = y0; y <= y1; y++) {
    const sy = y + 0.5;
    let xl = Infinity,
      xr = -Infinity;
    for (let i = 0, j = n - 1; i < n; j = i++) {
      const ay = poly[2 * j + 1] as number,
        by = poly[2 * i + 1] as number;
      if ((ay <= sy && by > sy) || (by <= sy && ay > sy)) {
        const ax = poly[2 * j] as number,
          bx = poly[2 * i] as number;
        const x = ax + ((sy - ay) * (bx - ax)) / (by - ay);
        if (x < xl) xl = x;
        if (x > xr) xr = x;
      }
    }
    if (xl > xr) continue;
    const x0 = Math.max(0, Math.ceil(xl - 0.5)),
      x1 = Math.min(W - 1, Math.floor(xr - 0.5));
    for (let x = x0; x <= x1; x++) {
      const o = (y * W + x) * 3;
      img[o] = r;
      img[o + 1] = g;
      img[o + 2] = b;
    }
  }
}
