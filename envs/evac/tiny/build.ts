/**
 * Builds the bundled tiny models as ONNX bytes: a world model that reads the block from the last
 * context frame, moves it with a closed gripper that reaches it, and draws the chunk's frames
 * (see scene.ts); a reward classifier that fires when the block is lifted; and an action adapter
 * that turns delta actions into absolute poses. The weights are set by hand, not trained: the
 * point is a world model whose dynamics mean something, small enough to run in tests.
 */
import { GraphBuilder } from '../onnx/writer.ts';
import { BLOCK_HALF, BLOCK_MASK, COLORS, GRASP_TOL, GRID, LIFT_Z, PX_PER_M, POS_STEP, REST_Z, ROT_STEP, TABLE_ROW, WORKSPACE } from './scene.ts';

export interface TinySpec {
  size: number;
  chunk: number;
  contextFrames: number;
}

const AX = (g: GraphBuilder, axes: number[]) => g.i64(axes);

/** Green level below which a pixel is the red block (see BLOCK_MASK). */
const BLOCK_G = BLOCK_MASK.gMax;

/**
 * Red-block mask (float 0/1) of a uint8 green channel: Clip(gMax - g, 0, 1) is 1 exactly when
 * g < gMax, for whole levels, in two float ops.
 */
function blockMask(g: GraphBuilder, green: string): string {
  return g.op('Clip', [g.op('Sub', [g.f32(BLOCK_G), g.op('Cast', [green], { to: 1 })]), g.f32(0), g.f32(1)]);
}

/**
 * The block covers exactly 2 x BLOCK_HALF = 6 grid units of pixel columns and rows, lies inside the
 * frame, and is drawn last in both views, so exactly one of every 6th column crosses all of its
 * rows and one of every 6th row all of its columns: centroids read from such a strided slice equal
 * the full frame's, from a sixth of the pixels.
 */
const STRIDE = 2 * BLOCK_HALF;

/** Sums x [N, n] against constant columns `weights` ([n] each): [N, weights.length] via one MatMul. */
function weighted(g: GraphBuilder, x: string, weights: number[][]): string {
  const n = weights[0]!.length;
  const flat: number[] = [];
  for (let i = 0; i < n; i++) for (const w of weights) flat.push(w[i]!);
  return g.op('MatMul', [x, g.f32(flat, [n, weights.length])]);
}

/**
 * The block seen in the last context frame [B,T,H,W,3] (uint8), in pixels: top-view column and
 * row, and height above the table from the front view; returns three [B,1] tensors.
 */
function readBlock(g: GraphBuilder, context: string, T: number, size: number): { x: string; y: string; z: string } {
  const k = STRIDE * (size / GRID);
  // Frames as [B, T, H, W*3], sliced straight from the input: strided slices of a flat last axis
  // stay cheap in onnxruntime (a trailing axis of 1 makes Slice and broadcasting go element by element).
  const frames = g.op('Reshape', [context, g.i64([0, T, size, size * 3])]);
  const green = (rowEnd: number, rowStep: number, colStep: number) =>
    g.op('Squeeze', [
      g.op('Slice', [frames, g.i64([T - 1, 0, 1]), g.i64([T, rowEnd, size * 3]), g.i64([1, 2, 3]), g.i64([1, rowStep, 3 * colStep])]),
      AX(g, [1]),
    ]);
  const centre = (i: number) => i + 0.5;
  const rowsIdx = Array.from({ length: size }, (_, i) => i);
  const top = (i: number) => (i < size / 2 ? 1 : 0);
  // Every k-th column of every row: rows of the block in both views.
  const perRow = g.op('ReduceSum', [blockMask(g, green(size, 1, k)), g.i64([2])], { keepdims: 0 });
  const rowSums = weighted(g, perRow, [
    rowsIdx.map((i) => top(i) * centre(i)),
    rowsIdx.map(top),
    rowsIdx.map((i) => (1 - top(i)) * centre(i)),
    rowsIdx.map((i) => 1 - top(i)),
  ]);
  // Every k-th row of the top view, every column: columns of the block.
  const perCol = g.op('ReduceSum', [blockMask(g, green(size / 2, k, 1)), g.i64([1])], { keepdims: 0 });
  const colSums = weighted(g, perCol, [rowsIdx.map(centre), rowsIdx.map(() => 1)]);
  const part = (x: string, i: number) => g.op('Slice', [x, g.i64([i]), g.i64([i + 1]), g.i64([1])]);
  const mean = (x: string, i: number) => g.op('Div', [part(x, i), g.op('Max', [part(x, i + 1), g.f32(1)])]);
  return { x: mean(colSums, 0), y: mean(rowSums, 0), z: g.op('Sub', [g.f32(TABLE_ROW * (size / GRID)), mean(rowSums, 2)]) };
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
  const seen = readBlock(g, context, T, size);
  const unsq = (x: string, axes: number[]) => g.op('Unsqueeze', [x, AX(g, axes)]);
  let block = g.op('Concat', [seen.x, seen.y, seen.z], { axis: 1 });

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
  const closedB = unsq(closed, [2, 3]);
  const closedF = g.op('Cast', [closedB], { to: 1 });

  const add = (a: string, b: string | number) => g.op('Add', [a, typeof b === 'number' ? g.f32(b) : b]);
  const sub = (a: string, b: string | number) => g.op('Sub', [a, typeof b === 'number' ? g.f32(b) : b]);
  const mul = (a: string, b: string | number) => g.op('Mul', [a, typeof b === 'number' ? g.f32(b) : b]);
  const min = (a: string, b: number) => g.op('Min', [a, g.f32(b)]);
  const flat = (xs: string[]) => g.op('Squeeze', [g.op('Concat', xs, { axis: 3 }), AX(g, [2])]);
  const i32 = (x: string) => g.op('Cast', [x], { to: 6 });
  const i64 = (x: string) => g.op('Cast', [x], { to: 7 });

  // Shapes in painting order, each a rectangle of columns [x0, x1) and rows [y0, y1) (pixel centres
  // inside), its extents [B,C,1,1] computed elementwise as the reference renderer does.
  const half = add(mul(ez, 10 / PX_PER_M), 2.5 * s);
  const inner = sub(half, 1.5 * s);
  const bh = BLOCK_HALF * s;
  const fr = sub(g.f32(TABLE_ROW * s), ez);
  const off = sub(g.f32(6 * s), mul(closedF, 2 * s));
  const offOut = add(off, s);
  const [lx, rx] = [sub(ex, off), add(ex, off)];
  const br = sub(g.f32(TABLE_ROW * s), bz);
  // The front view's gripper rows, top to bottom: arm, palm, fingers (a chain, so never inverted).
  const [armTop, palmTop] = [size / 2, g.op('Max', [sub(fr, 5 * s), g.f32(size / 2)])];
  const fingerTop = g.op('Max', [sub(fr, 4 * s), palmTop]);
  const fingerEnd = g.op('Max', [add(fr, 3 * s), fingerTop]);
  const innerX0 = sub(ex, inner);
  type Shape = { cols: [string, string][]; y0: string | number; y1: string | number; color: readonly number[] };
  const shapes: Shape[] = [
    // Top view (rows clipped to the top half): gripper, the open gripper's hole, block.
    { cols: [[sub(ex, half), add(ex, half)]], y0: min(sub(ey, half), size / 2), y1: min(add(ey, half), size / 2), color: COLORS.gripper },
    {
      cols: [[innerX0, g.op('Where', [closedB, innerX0, add(ex, inner)])]],
      y0: min(sub(ey, inner), size / 2),
      y1: min(add(ey, inner), size / 2),
      color: COLORS.wood,
    },
    { cols: [[sub(bx, bh), add(bx, bh)]], y0: min(sub(by, bh), size / 2), y1: min(add(by, bh), size / 2), color: COLORS.block },
    // Front view: arm, palm, the two fingers around the grasp point (one shape: same rows, columns
    // at least 2 grid units apart), block.
    { cols: [[sub(ex, s), add(ex, s)]], y0: armTop, y1: palmTop, color: COLORS.gripper },
    { cols: [[sub(ex, offOut), add(ex, offOut)]], y0: palmTop, y1: fingerTop, color: COLORS.gripper },
    {
      cols: [
        [sub(lx, s), add(lx, s)],
        [sub(rx, s), add(rx, s)],
      ],
      y0: fingerTop,
      y1: fingerEnd,
      color: COLORS.gripper,
    },
    { cols: [[sub(bx, bh), add(bx, bh)]], y0: sub(br, bh), y1: add(br, bh), color: COLORS.block },
  ];

  // Each shape paints one bit: a pixel's bits are its column's bits AND its row's bits, and the
  // highest set bit is the shape painted last. Rows also carry the background (0 to 2 in the two
  // bits above the shapes; columns have both set: PATTERNS = 3 x BG), so a pixel's palette entry is
  // a lookup of one BitwiseAnd.
  const palette: number[][] = [COLORS.wood, COLORS.sky, COLORS.tableFront, ...shapes.map((sh) => sh.color)].map((c) => [...c]);
  const SHAPE_BITS = shapes.length;
  const BG = 1 << SHAPE_BITS;
  const PATTERNS = 3 * BG;
  // A pixel column c is inside [x0, x1) when ceil(x0 - 0.5) <= c < ceil(x1 - 0.5) (exactly the
  // pixel-centre test); the same holds for rows.
  const firstIndex = (x: string, n: number) => i64(g.op('Clip', [g.op('Ceil', [sub(x, 0.5)]), g.f32(0), g.f32(n)]));
  const zerosLike = (x: string) => mul(x, 0);
  const zeros = (like: string, n: number) =>
    g.op('ConstantOfShape', [g.op('Concat', [g.op('Slice', [g.op('Shape', [like]), g.i64([0]), g.i64([2])]), g.i64([n])], { axis: 0 })], {
      value: { dtype: 'float32', dims: [1], data: Float32Array.of(0) },
    });
  /** Per index 0..n-1: the sum of `deltas` placed at positions `at` [B,C,m] at or before it. */
  const runningSum = (at: string, deltas: string, n: number) =>
    g.op('Slice', [
      g.op('CumSum', [g.op('ScatterElements', [zeros(at, n + 1), at, deltas], { axis: 2, reduction: 'add' }), g.i32([2], [])]),
      g.i64([0]),
      g.i64([n]),
      g.i64([2]),
    ]);

  // Column bits [B,C,W]: +bit where a span of a shape's columns starts, -bit where it ends, summed
  // along the row (an empty or inverted span adds nothing).
  const spans = shapes.flatMap((sh, j) => sh.cols.map(([x0, x1]) => ({ x0, x1, bit: 1 << j })));
  const xs0 = flat(spans.map((sp) => sp.x0));
  const xs1 = g.op('Max', [flat(spans.map((sp) => sp.x1)), xs0]);
  const colAt = g.op('Concat', [firstIndex(xs0, size), firstIndex(xs1, size)], { axis: 2 });
  const colDelta = add(zerosLike(g.op('Concat', [xs0, xs1], { axis: 2 })), g.f32([...spans.map((sp) => sp.bit), ...spans.map((sp) => -sp.bit)]));
  const colBits = add(runningSum(colAt, colDelta, size), PATTERNS);

  // Row templates. A row's bits change only at a boundary (a shape's first or last row, the split
  // between the views, the table's edge), so a frame has at most (boundaries + 1) distinct rows.
  // Each run of rows between boundaries is drawn once and the frame gathered from these templates
  // a whole row at a time. Boundaries at the same place are merged, with their bit changes summed.
  const rowDelta = new Map<string | number, number>();
  const addRow = (y: string | number, delta: number) => rowDelta.set(y, (rowDelta.get(y) ?? 0) + delta);
  shapes.forEach((sh, j) => {
    addRow(sh.y0, 1 << j);
    addRow(sh.y1, -(1 << j));
  });
  addRow(size / 2, BG);
  addRow(TABLE_ROW * s, BG);
  const rowKeys = [...rowDelta.keys()];
  const dynamicRows = rowKeys.filter((y): y is string => typeof y === 'string');
  const constRows = rowKeys.filter((y): y is number => typeof y === 'number');
  const someRow = g.op('Squeeze', [dynamicRows[0]!, AX(g, [3])]);
  const bounds = g.op('Concat', [...dynamicRows.map((y) => g.op('Squeeze', [y, AX(g, [3])])), add(zerosLike(someRow), g.f32(constRows))], { axis: 2 });
  const nBounds = rowKeys.length;
  const K = nBounds + 1;
  const boundDelta = add(zerosLike(bounds), g.f32([...dynamicRows, ...constRows].map((y) => rowDelta.get(y)!)));
  // The run of row r is the number of boundaries at or above its centre.
  const run = runningSum(firstIndex(bounds, size), add(zerosLike(bounds), 1), size);
  // A run's bits: the bit changes of the boundaries before it, in row order (run 0 is empty wood).
  const [, order] = g.opMulti('TopK', [bounds, g.i64([nBounds])], { axis: 2, largest: 0, sorted: 1 }, 2) as [string, string];
  const runBits = g.op('CumSum', [g.op('GatherElements', [boundDelta, order], { axis: 2 }), g.i32([2], [])]);
  const rowBits = g.op('Concat', [zerosLike(someRow), runBits], { axis: 2 });

  // Seeded noise: a per-frame brightness jitter (about +-2 levels) on each frame's own palette,
  // expanded to a table of all bit patterns laid out [pattern, frame, rgb] (one copy per pattern).
  // Frames are padded to a power of two F, so that a template pixel's entry pattern x F + frame is
  // one BitwiseAnd of a column word (bits x F, all frame bits set) and a row word (bits x F + frame).
  const P = palette.length;
  const lit = g.op('Clip', [g.op('Round', [add(g.f32(palette.flat(), [1, 1, P, 3]), unsq(mul(noise, 2), [2, 3]))]), g.f32(0), g.f32(255)]);
  const nFrames = g.op('Mul', [g.op('Gather', [g.op('Shape', [noise]), g.i64([0], [])], { axis: 0 }), g.i64([C], [])]);
  const powers = Array.from({ length: 24 }, (_, i) => 2 ** i);
  const log2 = g.op('ReduceSum', [g.op('Cast', [g.op('Greater', [nFrames, g.i64(powers.slice(0, -1))])], { to: 7 })], { keepdims: 0 });
  const padded = g.op('Gather', [g.i64(powers), log2], { axis: 0 });
  const byEntry = g.op('Reshape', [g.op('Transpose', [g.op('Cast', [lit], { to: 2 })], { perm: [2, 0, 1, 3] }), g.i64([P, -1])]);
  const padCols = g.op('Mul', [g.op('Sub', [padded, nFrames]), g.i64([3], [])]);
  const byEntryPadded = g.op('Pad', [byEntry, g.op('Concat', [g.i64([0, 0, 0]), g.op('Unsqueeze', [padCols, AX(g, [0])])], { axis: 0 })]);
  const lut = Array.from({ length: PATTERNS }, (_, p) => {
    const shapeBits = p & (BG - 1);
    return shapeBits === 0 ? p >> SHAPE_BITS : 3 + Math.floor(Math.log2(shapeBits));
  });
  const table = g.op('Reshape', [g.op('Gather', [byEntryPadded, g.i64(lut)], { axis: 0 }), g.i64([-1, 3])]);
  const F = i32(padded);
  const frameNo = g.op('Reshape', [g.op('Range', [g.i32([0], []), i32(nFrames), g.i32([1], [])]), g.i64([-1, C, 1])]);
  const colWord = g.op('Add', [g.op('Mul', [i32(colBits), F]), g.op('Sub', [F, g.i32([1], [])])]);
  const rowWord = g.op('Add', [g.op('Mul', [i32(rowBits), F]), frameNo]);
  const entry = g.op('BitwiseAnd', [unsq(colWord, [2]), unsq(rowWord, [3])]);
  const templates = g.op('Reshape', [g.op('Gather', [table, entry], { axis: 0 }), g.i64([-1, size, 3])]);
  const rowOf = g.op('Add', [i64(run), i64(g.op('Mul', [frameNo, g.i32([K], [])]))]);
  const frames = g.op('Gather', [templates, rowOf], { axis: 0 });
  g.output(frames, 'frames', 'uint8', ['B', C, size, size, 3]);
  return g.toModel({ graphName: `tiny_world_model_${size}`, opset: 18 });
}

/** reward.onnx: frames uint8 [N,H,W,3] -> prob float32 [N,1]; fires when the block is lifted. */
export function buildTinyReward(size: number): Uint8Array {
  const s = size / GRID;
  const g = new GraphBuilder();
  const frames = g.input('frames', 'uint8', ['N', size, size, 3]);
  // Only the front view shows height, and every k-th column crosses all of the block's rows
  // (STRIDE): score the green channel of those.
  const k = STRIDE * s;
  const flat = g.op('Reshape', [frames, g.i64([-1, size, size * 3])]);
  const front = g.op('Slice', [flat, g.i64([size / 2, 1]), g.i64([size, size * 3]), g.i64([1, 2]), g.i64([1, 3 * k])]);
  const perRow = g.op('ReduceSum', [blockMask(g, front), g.i64([2])], { keepdims: 0 });
  const rows = Array.from({ length: size / 2 }, (_, i) => size / 2 + i + 0.5);
  const sums = weighted(g, perRow, [rows, rows.map(() => 1)]);
  const part = (i: number) => g.op('Slice', [sums, g.i64([i]), g.i64([i + 1]), g.i64([1])]);
  const count = part(1);
  const frontRow = g.op('Div', [part(0), g.op('Max', [count, g.f32(1)])]);
  const height = g.op('Sub', [g.f32(TABLE_ROW * s), frontRow]);
  const logit = g.op('Mul', [g.op('Sub', [height, g.f32(LIFT_Z * s)]), g.f32(2 / s)]);
  const visible = g.op('Cast', [g.op('Greater', [count, g.f32(0.5)])], { to: 1 });
  g.output(g.op('Mul', [g.op('Sigmoid', [logit]), visible]), 'prob', 'float32', ['N', 1]);
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
    const [cr, sr, cp, sp, cy, sy] = [3, 4, 5].flatMap((i) => [g.op('Cos', [half(i)]), g.op('Sin', [half(i)])]) as string[] as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
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
