/**
 * Builds the bundled tiny models as ONNX bytes: a world model that reads the block from the last
 * context frame, moves it with a closed gripper that reaches it, and draws the chunk's frames
 * (see scene.ts); a reward classifier that fires when the block is lifted; and an action adapter
 * that turns delta actions into absolute poses. The weights are set by hand, not trained: the
 * point is a world model whose dynamics mean something, small enough to run in tests.
 */
import { GraphBuilder } from '../onnx/writer.ts';
import {
  BLOCK_HALF,
  BLOCK_MASK,
  COLORS,
  GRASP_TOL,
  GRID,
  LIFT_Z,
  PX_PER_M,
  POS_STEP,
  REST_Z,
  ROT_STEP,
  TABLE_ROW,
  WORKSPACE,
} from './scene.ts';

export interface TinySpec {
  size: number;
  chunk: number;
  contextFrames: number;
}

const AX = (g: GraphBuilder, axes: number[]) => g.i64(axes);

/** Pixel-centre coordinates: columns [W] and rows [H,1]. */
function grids(g: GraphBuilder, size: number) {
  const centres = Array.from({ length: size }, (_, i) => i + 0.5);
  return { col: g.f32(centres, [size]), row: g.f32(centres, [size, 1]) };
}

/** Red-block mask [..., H, W] (float 0/1) of a float RGB tensor [..., H, W, 3]. */
function blockMask(g: GraphBuilder, rgb: string): string {
  const ch = (i: number) => g.op('Gather', [rgb, g.i64([i], [])], { axis: -1 });
  const r = g.op('Greater', [ch(0), g.f32(BLOCK_MASK.rMin)]);
  const gr = g.op('Less', [ch(1), g.f32(BLOCK_MASK.gMax)]);
  const b = g.op('Less', [ch(2), g.f32(BLOCK_MASK.bMax)]);
  return g.op('Cast', [g.op('And', [g.op('And', [r, gr]), b])], { to: 1 });
}

/** Rows of the top view as [H,1] float (1 above the middle, 0 below). */
function topRows(g: GraphBuilder, size: number): string {
  return g.f32(
    Array.from({ length: size }, (_, i) => (i < size / 2 ? 1 : 0)),
    [size, 1],
  );
}

/**
 * Block height in pixels above the table, read from the front view of frames [N,H,W,3] (float);
 * returns [height [N], count [N]].
 */
function frontHeight(g: GraphBuilder, rgb: string, size: number): { height: string; count: string; top: { x: string; y: string } } {
  const { col, row } = grids(g, size);
  const mask = blockMask(g, rgb);
  const topInd = topRows(g, size);
  const top = g.op('Mul', [mask, topInd]);
  const front = g.op('Sub', [mask, top]);
  const sum = (x: string) => g.op('ReduceSum', [x, AX(g, [1, 2])], { keepdims: 0 });
  const nTop = g.op('Max', [sum(top), g.f32(1)]);
  const nFront = g.op('Max', [sum(front), g.f32(1)]);
  const frontRow = g.op('Div', [sum(g.op('Mul', [front, row])), nFront]);
  return {
    height: g.op('Sub', [g.f32(TABLE_ROW * (size / GRID)), frontRow]),
    count: sum(front),
    top: { x: g.op('Div', [sum(g.op('Mul', [top, col])), nTop]), y: g.op('Div', [sum(g.op('Mul', [top, row])), nTop]) },
  };
}

/** world_model.onnx: context uint8 [B,T,H,W,3], actions [B,C,7], poses [B,C,8], noise [B,C] -> frames uint8 [B,C,H,W,3]. */
export function buildTinyWorldModel(spec: TinySpec): Uint8Array {
  const { size, chunk: C, contextFrames: T } = spec;
  const s = size / GRID;
  const g = new GraphBuilder();
  const context = g.input('context', 'uint8', ['B', T, size, size, 3]);
  const actions = g.input('actions', 'float32', ['B', C, 7]);
  const poses = g.input('poses', 'float32', ['B', C, 8]);
  const noise = g.input('noise', 'float32', ['B', C]);

  // The block as the last context frame shows it: [B,3] pixels (column, top row, height).
  const last = g.op('Cast', [g.op('Gather', [context, g.i64([T - 1], [])], { axis: 1 })], { to: 1 });
  const seen = frontHeight(g, last, size);
  const unsq = (x: string, axes: number[]) => g.op('Unsqueeze', [x, AX(g, axes)]);
  let block = g.op('Concat', [unsq(seen.top.x, [1]), unsq(seen.top.y, [1]), unsq(seen.height, [1])], { axis: 1 });

  // End-effector in pixels [B,C,3] and the gripper command [B,C].
  const xyz = g.op('Slice', [poses, g.i64([0]), g.i64([3]), g.i64([2])]);
  const ee = g.op('Add', [g.op('Mul', [xyz, g.f32([PX_PER_M * s, PX_PER_M * s, PX_PER_M * s])]), g.f32([(GRID / 2) * s, (GRID / 4) * s, 0])]);
  const closed = g.op('Greater', [g.op('Gather', [actions, g.i64([6], [])], { axis: 2 }), g.f32(0)]);

  // Frame by frame: a closed gripper within reach carries the block; otherwise it rests on the table.
  const keepXY = g.f32([1, 1, 0]);
  const restZ = g.f32([0, 0, REST_Z * s]);
  const tol = g.f32(GRASP_TOL * s);
  const blocks: string[] = [];
  for (let t = 0; t < C; t++) {
    const eeT = g.op('Gather', [ee, g.i64([t], [])], { axis: 1 });
    const dist = g.op('Abs', [g.op('Sub', [eeT, block])]);
    const within = g.op('ReduceSum', [g.op('Cast', [g.op('Less', [dist, tol])], { to: 1 }), AX(g, [1])], { keepdims: 1 });
    const near = g.op('Greater', [within, g.f32(2.5)]);
    const closedT = unsq(g.op('Gather', [closed, g.i64([t], [])], { axis: 1 }), [1]);
    const held = g.op('And', [near, closedT]);
    const resting = g.op('Add', [g.op('Mul', [block, keepXY]), restZ]);
    block = g.op('Where', [held, eeT, resting]);
    blocks.push(unsq(block, [1]));
  }
  const blockSeq = g.op('Concat', blocks, { axis: 1 });

  // Per-frame scalars as [B,C,1,1] for drawing.
  const comp = (x: string, i: number) => unsq(g.op('Gather', [x, g.i64([i], [])], { axis: 2 }), [2, 3]);
  const [ex, ey, ez] = [0, 1, 2].map((i) => comp(ee, i)) as [string, string, string];
  const [bx, by, bz] = [0, 1, 2].map((i) => comp(blockSeq, i)) as [string, string, string];
  const closedF = unsq(g.op('Cast', [closed], { to: 1 }), [2, 3]);
  const openF = g.op('Sub', [g.f32(1), closedF]);

  // Row quantities are kept as [B,C,H] (not [B,C,H,1]): onnxruntime broadcasts a trailing 1 one
  // element at a time, which made these small tensors cost more than the whole frame.
  const { col } = grids(g, size);
  const row = g.f32(
    Array.from({ length: size }, (_, i) => i + 0.5),
    [size],
  );
  const topPanel = g.f32(
    Array.from({ length: size }, (_, i) => (i < size / 2 ? 1 : 0)),
    [size],
  );
  const squeezeLast = (x: string | number) => (typeof x === 'number' ? x : g.op('Squeeze', [x, AX(g, [3])]));
  const add = (a: string, b: string | number) => g.op('Add', [a, typeof b === 'number' ? g.f32(b) : b]);
  const sub = (a: string, b: string | number) => g.op('Sub', [a, typeof b === 'number' ? g.f32(b) : b]);
  const mul = (a: string, b: string | number) => g.op('Mul', [a, typeof b === 'number' ? g.f32(b) : b]);
  const within = (grid: string, lo: string | number, hi: string | number) =>
    g.op('Cast', [g.op('And', [g.op('GreaterOrEqual', [grid, typeof lo === 'number' ? g.f32(lo) : lo]), g.op('Less', [grid, typeof hi === 'number' ? g.f32(hi) : hi])])], { to: 1 });

  // Each shape paints one bit: a pixel's bits are its column's bits AND its row's bits (shapes are
  // rectangles), and the highest set bit is the shape painted last. Rows also carry the background
  // (bits 8-9) and the frame number (bits 10 and up; columns have all of those set), so the whole
  // per-pixel work is one BitwiseAnd and one uint8 Gather from a per-frame colour table. (Painting
  // palette ids with Mul and Max on float [B,C,H,W] cost three times as much.)
  const palette: number[][] = [COLORS.wood, COLORS.sky, COLORS.tableFront].map((c) => [...c]);
  const SHAPE_BITS = 8;
  const TABLE = 4 << SHAPE_BITS;
  const i32 = (x: string) => g.op('Cast', [x], { to: 6 });
  // Sums of distinct powers of two below 2^24 are exact in float32; one cast to int32 at the end.
  let colBits = g.f32(-1 << SHAPE_BITS);
  const bgCode = Array.from({ length: size }, (_, r) => (r < size / 2 ? 0 : r + 0.5 < TABLE_ROW * s ? 1 : 2));
  let rowBits = g.f32(
    bgCode.map((b) => b << SHAPE_BITS),
    [size],
  );
  const paint = (x0: string | number, x1: string | number, y0: string | number, y1: string | number, color: readonly number[], opts: { topOnly?: boolean; when?: string } = {}) => {
    const bit = palette.length - 3;
    palette.push([...color]);
    let cols = within(col, x0, x1);
    if (opts.when) cols = mul(cols, opts.when);
    let rows = within(row, squeezeLast(y0), squeezeLast(y1));
    if (opts.topOnly) rows = mul(rows, topPanel);
    colBits = add(colBits, mul(cols, 1 << bit));
    rowBits = add(rowBits, mul(rows, 1 << bit));
  };

  const half = add(mul(ez, 10 / PX_PER_M), 2.5 * s);
  paint(sub(ex, half), add(ex, half), sub(ey, half), add(ey, half), COLORS.gripper, { topOnly: true });
  const inner = sub(half, 1.5 * s);
  paint(sub(ex, inner), add(ex, inner), sub(ey, inner), add(ey, inner), COLORS.wood, { topOnly: true, when: openF });
  const bh = BLOCK_HALF * s;
  paint(sub(bx, bh), add(bx, bh), sub(by, bh), add(by, bh), COLORS.block, { topOnly: true });

  const fr = sub(g.f32(TABLE_ROW * s), ez);
  const off = sub(g.f32(6 * s), mul(closedF, 2 * s));
  paint(sub(ex, s), add(ex, s), size / 2, sub(fr, 5 * s), COLORS.gripper);
  const offOut = add(off, s);
  paint(sub(ex, offOut), add(ex, offOut), sub(fr, 5 * s), sub(fr, 4 * s), COLORS.gripper);
  const lx = sub(ex, off);
  const rx = add(ex, off);
  paint(sub(lx, s), add(lx, s), sub(fr, 4 * s), add(fr, 3 * s), COLORS.gripper);
  paint(sub(rx, s), add(rx, s), sub(fr, 4 * s), add(fr, 3 * s), COLORS.gripper);
  const br = sub(g.f32(TABLE_ROW * s), bz);
  paint(sub(bx, bh), add(bx, bh), sub(br, bh), add(br, bh), COLORS.block);

  // Seeded noise: a per-frame brightness jitter (about +-2 levels), applied to each frame's own
  // copy of the palette, expanded to the frame's table of all bit patterns.
  const K = palette.length;
  const lit = g.op('Clip', [g.op('Round', [add(g.f32(palette.flat(), [1, 1, K, 3]), unsq(mul(noise, 2), [2, 3]))]), g.f32(0), g.f32(255)]);
  const lut = Array.from({ length: TABLE }, (_, p) => {
    const shapes = p & ((1 << SHAPE_BITS) - 1);
    return shapes === 0 ? Math.min(2, p >> SHAPE_BITS) : 3 + Math.floor(Math.log2(shapes));
  });
  const tables = g.op('Reshape', [g.op('Gather', [g.op('Cast', [lit], { to: 2 }), g.i64(lut)], { axis: 2 }), g.i64([-1, 3])]);
  const nFrames = i32(g.op('Mul', [g.op('Gather', [g.op('Shape', [noise]), g.i64([0], [])], { axis: 0 }), g.i64([C], [])]));
  const frameBits = g.op('Reshape', [g.op('Mul', [g.op('Range', [g.i32([0], []), nFrames, g.i32([1], [])]), g.i32([TABLE], [])]), g.i64([-1, C, 1])]);
  const index = g.op('BitwiseAnd', [i32(colBits), unsq(g.op('Add', [i32(rowBits), frameBits]), [3])]);
  const frames = g.op('Gather', [tables, index], { axis: 0 });
  g.output(frames, 'frames', 'uint8', ['B', C, size, size, 3]);
  return g.toModel({ graphName: `tiny_world_model_${size}`, opset: 18 });
}

/** reward.onnx: frames uint8 [N,H,W,3] -> prob float32 [N,1]; fires when the block is lifted. */
export function buildTinyReward(size: number): Uint8Array {
  const s = size / GRID;
  const g = new GraphBuilder();
  const frames = g.input('frames', 'uint8', ['N', size, size, 3]);
  // Only the front view shows height: score its rows alone.
  const front = g.op('Slice', [frames, g.i64([size / 2]), g.i64([size]), g.i64([1])]);
  const mask = blockMask(g, g.op('Cast', [front], { to: 1 }));
  const rows = g.f32(
    Array.from({ length: size / 2 }, (_, i) => size / 2 + i + 0.5),
    [size / 2, 1],
  );
  const sum = (x: string) => g.op('ReduceSum', [x, AX(g, [1, 2])], { keepdims: 0 });
  const count = sum(mask);
  const frontRow = g.op('Div', [sum(g.op('Mul', [mask, rows])), g.op('Max', [count, g.f32(1)])]);
  const seen = { height: g.op('Sub', [g.f32(TABLE_ROW * s), frontRow]), count };
  const logit = g.op('Mul', [g.op('Sub', [seen.height, g.f32(LIFT_Z * s)]), g.f32(2 / s)]);
  const visible = g.op('Cast', [g.op('Greater', [seen.count, g.f32(0.5)])], { to: 1 });
  const prob = g.op('Mul', [g.op('Sigmoid', [logit]), visible]);
  g.output(g.op('Unsqueeze', [prob, g.i64([1])]), 'prob', 'float32', ['N', 1]);
  return g.toModel({ graphName: `tiny_reward_${size}` });
}

/** action_adapter.onnx: delta [B,C,7], pose [B,8] -> poses [B,C,8], unrolled over the chunk (see integratePose). */
export function buildTinyActionAdapter(chunk: number): Uint8Array {
  const g = new GraphBuilder();
  const delta = g.input('delta', 'float32', ['B', chunk, 7]);
  const pose0 = g.input('pose', 'float32', ['B', 8]);
  const col = (x: string, i: number) => g.op('Slice', [x, g.i64([i]), g.i64([i + 1]), g.i64([1])]);
  const mul = (a: string, b: string) => g.op('Mul', [a, b]);
  const add = (...xs: string[]) => xs.reduce((a, b) => g.op('Add', [a, b]));
  const sub = (a: string, b: string) => g.op('Sub', [a, b]);
  let pose = pose0;
  const out: string[] = [];
  for (let t = 0; t < chunk; t++) {
    const d = g.op('Gather', [delta, g.i64([t], [])], { axis: 1 });
    const pos = add(col3(g, pose, 0), g.op('Mul', [col3(g, d, 0), g.f32(POS_STEP)]));
    const posC = g.op('Min', [g.op('Max', [pos, g.f32([...WORKSPACE.low])]), g.f32([...WORKSPACE.high])]);
    const half = (i: number) => g.op('Mul', [col(d, i), g.f32(ROT_STEP / 2)]);
    const [cr, sr, cp, sp, cy, sy] = [3, 4, 5].flatMap((i) => [g.op('Cos', [half(i)]), g.op('Sin', [half(i)])]) as string[] as [string, string, string, string, string, string];
    const b = [
      sub(mul(mul(sr, cp), cy), mul(mul(cr, sp), sy)),
      add(mul(mul(cr, sp), cy), mul(mul(sr, cp), sy)),
      sub(mul(mul(cr, cp), sy), mul(mul(sr, sp), cy)),
      add(mul(mul(cr, cp), cy), mul(mul(sr, sp), sy)),
    ] as [string, string, string, string];
    const [ax, ay, az, aw] = [3, 4, 5, 6].map((i) => col(pose, i)) as [string, string, string, string];
    const [bx, by, bz, bw] = b;
    const q = [
      sub(add(mul(aw, bx), mul(ax, bw), mul(ay, bz)), mul(az, by)),
      add(sub(mul(aw, by), mul(ax, bz)), mul(ay, bw), mul(az, bx)),
      add(sub(add(mul(aw, bz), mul(ax, by)), mul(ay, bx)), mul(az, bw)),
      sub(sub(sub(mul(aw, bw), mul(ax, bx)), mul(ay, by)), mul(az, bz)),
    ];
    const quat = g.op('Concat', q, { axis: 1 });
    const norm = g.op('Sqrt', [g.op('ReduceSum', [g.op('Mul', [quat, quat]), g.i64([1])], { keepdims: 1 })]);
    const grip = g.op('Clip', [col(d, 6), g.f32(-1), g.f32(1)]);
    pose = g.op('Concat', [posC, g.op('Div', [quat, norm]), grip], { axis: 1 });
    out.push(g.op('Unsqueeze', [pose, g.i64([1])]));
  }
  g.output(g.op('Concat', out, { axis: 1 }), 'poses', 'float32', ['B', chunk, 8]);
  return g.toModel({ graphName: 'tiny_action_adapter' });
}

function col3(g: GraphBuilder, x: string, start: number): string {
  return g.op('Slice', [x, g.i64([start]), g.i64([start + 3]), g.i64([1])]);
}
