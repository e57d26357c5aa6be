/**
 * Planar geometry for the driving world: oriented boxes, polygons, polylines and a uniform grid
 * index. Everything works on flat `Float64Array`s of interleaved coordinates `[x0, y0, x1, y1, ...]`
 * so the hot paths (collision checks for ~50 agents x 41 steps x 2 proposals) allocate nothing.
 *
 * Conventions: metres and radians, x forward / y left, headings counter-clockwise from +x. Box
 * corners are ordered as nuPlan's `BBCoordsIndex`: front-left, rear-left, rear-right, front-right,
 * so the front bumper is the segment corner 0 -> corner 3. Polygons may be open or closed (a repeated
 * first point is harmless). "Intersects" follows shapely: touching counts.
 *
 * @example
 * const ego = boxCorners({ x: 0, y: 0, heading: 0, length: 5, width: 2 });
 * const other = boxCorners({ x: 4, y: 0.5, heading: 0.3, length: 4, width: 2 });
 * convexIntersects(ego, other); // true
 */

/** A flat polygon or polyline: `[x0, y0, x1, y1, ...]`. */
export type Coords = Float64Array;

/** An oriented box by its centre. */
export interface OrientedBox {
  x: number;
  y: number;
  heading: number;
  length: number;
  width: number;
}

/** Wraps an angle to [-pi, pi], as nuPlan's `principal_value` / NAVSIM's `normalize_angle`. */
export function normalizeAngle(a: number): number {
  // arctan2(sin, cos) is what NAVSIM uses; it is exact at the boundaries the way numpy's is.
  return Math.atan2(Math.sin(a), Math.cos(a));
}

/** nuPlan's `principal_value`: (a + pi) mod 2pi - pi with a floor modulo (result in [-pi, pi)). */
export function principalValue(a: number): number {
  const twoPi = 2 * Math.PI;
  const s = a + Math.PI;
  return s - Math.floor(s / twoPi) * twoPi - Math.PI;
}

/** Builds a flat coords array from `[[x, y], ...]`. */
export function coordsFrom(points: readonly (readonly number[])[]): Coords {
  const out = new Float64Array(points.length * 2);
  points.forEach((p, i) => {
    out[2 * i] = p[0] ?? 0;
    out[2 * i + 1] = p[1] ?? 0;
  });
  return out;
}

/** Corners of an oriented box (FL, RL, RR, FR), written into `out` when given. */
export function boxCorners(b: OrientedBox, out: Coords = new Float64Array(8)): Coords {
  const c = Math.cos(b.heading);
  const s = Math.sin(b.heading);
  const hl = b.length / 2;
  const hw = b.width / 2;
  const lx = c * hl;
  const ly = s * hl;
  const wx = -s * hw;
  const wy = c * hw;
  out[0] = b.x + lx + wx;
  out[1] = b.y + ly + wy; // front-left
  out[2] = b.x - lx + wx;
  out[3] = b.y - ly + wy; // rear-left
  out[4] = b.x - lx - wx;
  out[5] = b.y - ly - wy; // rear-right
  out[6] = b.x + lx - wx;
  out[7] = b.y + ly - wy; // front-right
  return out;
}

/** Number of vertices, ignoring a closing vertex equal to the first. */
export function vertexCount(p: Coords): number {
  let n = p.length >> 1;
  if (n > 1 && p[0] === p[2 * n - 2] && p[1] === p[2 * n - 1]) n -= 1;
  return n;
}

/** Axis-aligned bounds `[minX, minY, maxX, maxY]`. */
export function bounds(p: Coords): [number, number, number, number] {
  let minX = Infinity,
    minY = Infinity,
    maxX = -Infinity,
    maxY = -Infinity;
  for (let i = 0; i < p.length; i += 2) {
    const x = p[i] as number,
      y = p[i + 1] as number;
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  return [minX, minY, maxX, maxY];
}

/**
 * Where a point on a polygon's boundary falls: `'inside'` as shapely's `intersects` (and nuPlan's
 * occupancy-map queries) count it, `'outside'` as shapely's `contains` and `within` do (NAVSIM's
 * drivable-area, lane and intersection tests). "On the boundary" is decided exactly, as GEOS does:
 * a point a hair inside an edge is inside.
 */
export type Edge = 'inside' | 'outside';

/** Even-odd point-in-polygon with exact orientation signs; `edge` says where boundary points fall (inside by default). */
export function pointInPolygon(px: number, py: number, p: Coords, edge: Edge = 'inside'): boolean {
  const n = vertexCount(p);
  let inside = false;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xi = p[2 * i] as number,
      yi = p[2 * i + 1] as number;
    const xj = p[2 * j] as number,
      yj = p[2 * j + 1] as number;
    // Only edges spanning the point's row (ends included) can hold it or cross the row.
    if (py < (yi < yj ? yi : yj) || py > (yi > yj ? yi : yj)) continue;
    const side = orientSign(xi, yi, xj, yj, px, py);
    if (side === 0 && px >= (xi < xj ? xi : xj) && px <= (xi > xj ? xi : xj)) return edge === 'inside';
    const inY = yi > py !== yj > py;
    // The ray runs right: the edge crosses it when the point lies left of the edge going up (right going down).
    if (inY && side === (yj > yi ? 1 : -1)) inside = !inside;
  }
  return inside;
}

/**
 * Exact sign of `orient` (Shewchuk's filter: the float determinant where its error bound allows,
 * else the determinant in integers, every double being an integer multiple of 2^-1074).
 */
export function orientSign(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): -1 | 0 | 1 {
  const left = (bx - ax) * (cy - ay),
    right = (by - ay) * (cx - ax);
  const det = left - right;
  if (Math.abs(det) > 4e-16 * (Math.abs(left) + Math.abs(right))) return det > 0 ? 1 : -1;
  const [Ax, Ay, Bx, By, Cx, Cy] = [ax, ay, bx, by, cx, cy].map(exactInteger) as [bigint, bigint, bigint, bigint, bigint, bigint];
  const exact = (Bx - Ax) * (Cy - Ay) - (By - Ay) * (Cx - Ax);
  return exact > 0n ? 1 : exact < 0n ? -1 : 0;
}

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

/** `x · 2^1074` as an integer, exactly (x a finite double). */
function exactInteger(x: number): bigint {
  F64[0] = x;
  const hi = U32[1] as number,
    lo = U32[0] as number;
  const exponent = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (exponent > 0) mantissa |= 1n << 52n;
  const v = mantissa << BigInt(Math.max(exponent, 1) - 1);
  return hi >>> 31 ? -v : v;
}

/** True when segments AB and CD share a point. */
export function segmentsIntersect(ax: number, ay: number, bx: number, by: number, cx: number, cy: number, dx: number, dy: number): boolean {
  const d1 = orientSign(cx, cy, dx, dy, ax, ay);
  const d2 = orientSign(cx, cy, dx, dy, bx, by);
  const d3 = orientSign(ax, ay, bx, by, cx, cy);
  const d4 = orientSign(ax, ay, bx, by, dx, dy);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))) return true;
  if (d1 === 0 && onBox(cx, cy, dx, dy, ax, ay)) return true;
  if (d2 === 0 && onBox(cx, cy, dx, dy, bx, by)) return true;
  if (d3 === 0 && onBox(ax, ay, bx, by, cx, cy)) return true;
  if (d4 === 0 && onBox(ax, ay, bx, by, dx, dy)) return true;
  return false;
}

function orient(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number {
  return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

function onBox(ax: number, ay: number, bx: number, by: number, px: number, py: number): boolean {
  return px >= Math.min(ax, bx) && px <= Math.max(ax, bx) && py >= Math.min(ay, by) && py <= Math.max(ay, by);
}

/** True when segment AB touches polygon `p` (crosses an edge or lies inside). */
export function segmentIntersectsPolygon(ax: number, ay: number, bx: number, by: number, p: Coords): boolean {
  if (pointInPolygon(ax, ay, p) || pointInPolygon(bx, by, p)) return true;
  const n = vertexCount(p);
  for (let i = 0, j = n - 1; i < n; j = i++) {
    if (segmentsIntersect(ax, ay, bx, by, p[2 * j] as number, p[2 * j + 1] as number, p[2 * i] as number, p[2 * i + 1] as number)) return true;
  }
  return false;
}

/**
 * True when two convex polygons (boxes) overlap or touch, decided exactly as shapely's `intersects`:
 * GEOS answers from exact orientation signs on the given doubles, so boxes 1e-11 m apart never
 * touch, whatever their size or position (reference scene `barrier_pico`). A separating-axis test
 * answers when every axis clears rounding by a wide margin; pairs within that margin of touching
 * go to the exact edge test. Allocation free; about 50 ns for two boxes.
 */
export function convexIntersects(a: Coords, b: Coords): boolean {
  const scale = Math.max(maxAbs(a), maxAbs(b)) + 1;
  const ab = axisVerdict(a, b, scale);
  if (ab === Verdict.Separated) return false;
  const ba = axisVerdict(b, a, scale);
  if (ba === Verdict.Separated) return false;
  if (ab === Verdict.Overlapping && ba === Verdict.Overlapping) return true;
  return polygonsIntersect(a, b);
}

/** What one polygon's edge normals say about a pair (see {@link axisVerdict}). */
const Verdict = { Separated: 0, Overlapping: 1, Unsure: 2 } as const;
type Verdict = (typeof Verdict)[keyof typeof Verdict];

/**
 * Projections on the edge normals of `a`: separated on one axis, overlapping on all, or within the
 * margin of touching somewhere. The margin (1e-9 of the projected scale) is far above the rounding
 * of a projection (about 1e-16 of it), so a clear answer is the exact one.
 */
function axisVerdict(a: Coords, b: Coords, scale: number): Verdict {
  const na = vertexCount(a);
  const nb = vertexCount(b);
  let verdict: Verdict = Verdict.Overlapping;
  for (let i = 0, j = na - 1; i < na; j = i++) {
    const nx = (a[2 * i + 1] as number) - (a[2 * j + 1] as number);
    const ny = (a[2 * j] as number) - (a[2 * i] as number);
    let minA = Infinity,
      maxA = -Infinity,
      minB = Infinity,
      maxB = -Infinity;
    for (let k = 0; k < na; k++) {
      const d = (a[2 * k] as number) * nx + (a[2 * k + 1] as number) * ny;
      if (d < minA) minA = d;
      if (d > maxA) maxA = d;
    }
    for (let k = 0; k < nb; k++) {
      const d = (b[2 * k] as number) * nx + (b[2 * k + 1] as number) * ny;
      if (d < minB) minB = d;
      if (d > maxB) maxB = d;
    }
    const gap = Math.max(minB - maxA, minA - maxB);
    const margin = 1e-9 * (Math.abs(nx) + Math.abs(ny)) * scale;
    if (gap > margin) return Verdict.Separated;
    if (gap >= -margin) verdict = Verdict.Unsure;
  }
  return verdict;
}

function maxAbs(p: Coords): number {
  let m = 0;
  for (let i = 0; i < p.length; i++) m = Math.max(m, Math.abs(p[i] as number));
  return m;
}

/** General polygon intersection test (either may be concave): an edge crossing or containment. */
export function polygonsIntersect(a: Coords, b: Coords): boolean {
  const ba = bounds(a),
    bb = bounds(b);
  if (ba[2] < bb[0] || bb[2] < ba[0] || ba[3] < bb[1] || bb[3] < ba[1]) return false;
  const na = vertexCount(a),
    nb = vertexCount(b);
  for (let i = 0, j = na - 1; i < na; j = i++) {
    const ax = a[2 * j] as number,
      ay = a[2 * j + 1] as number,
      bx = a[2 * i] as number,
      by = a[2 * i + 1] as number;
    for (let k = 0, l = nb - 1; k < nb; l = k++) {
      if (segmentsIntersect(ax, ay, bx, by, b[2 * l] as number, b[2 * l + 1] as number, b[2 * k] as number, b[2 * k + 1] as number)) return true;
    }
  }
  return pointInPolygon(a[0] as number, a[1] as number, b) || pointInPolygon(b[0] as number, b[1] as number, a);
}

/** Signed area (counter-clockwise positive). */
export function signedArea(p: Coords): number {
  const n = vertexCount(p);
  let s = 0;
  for (let i = 0, j = n - 1; i < n; j = i++) s += (p[2 * j] as number) * (p[2 * i + 1] as number) - (p[2 * i] as number) * (p[2 * j + 1] as number);
  return s / 2;
}

/** Area centroid of a simple polygon (shapely's `centroid`); the vertex mean when the area vanishes. */
export function polygonCentroid(p: Coords): { x: number; y: number } {
  const n = vertexCount(p);
  let a = 0,
    cx = 0,
    cy = 0;
  const x0 = p[0] as number,
    y0 = p[1] as number;
  for (let i = 0, j = n - 1; i < n; j = i++) {
    const xj = (p[2 * j] as number) - x0,
      yj = (p[2 * j + 1] as number) - y0,
      xi = (p[2 * i] as number) - x0,
      yi = (p[2 * i + 1] as number) - y0;
    const cross = xj * yi - xi * yj;
    a += cross;
    cx += (xj + xi) * cross;
    cy += (yj + yi) * cross;
  }
  if (Math.abs(a) < 1e-12) {
    let sx = 0,
      sy = 0;
    for (let i = 0; i < n; i++) {
      sx += p[2 * i] as number;
      sy += p[2 * i + 1] as number;
    }
    return { x: sx / n, y: sy / n };
  }
  return { x: x0 + cx / (3 * a), y: y0 + cy / (3 * a) };
}

/** Area of the intersection of two convex polygons (Sutherland-Hodgman clipping). */
export function convexIntersectionArea(subject: Coords, clip: Coords): number {
  let out: number[] = Array.from(subject.subarray(0, vertexCount(subject) * 2));
  const n = vertexCount(clip);
  const ccw = signedArea(clip) >= 0 ? 1 : -1;
  for (let i = 0, j = n - 1; i < n && out.length > 0; j = i++) {
    const ax = clip[2 * j] as number,
      ay = clip[2 * j + 1] as number,
      bx = clip[2 * i] as number,
      by = clip[2 * i + 1] as number;
    const input = out;
    out = [];
    const m = input.length / 2;
    for (let k = 0; k < m; k++) {
      const px = input[2 * k] as number,
        py = input[2 * k + 1] as number;
      const qx = input[(2 * k + 2) % input.length] as number,
        qy = input[(2 * k + 3) % input.length] as number;
      const dp = ccw * orient(ax, ay, bx, by, px, py),
        dq = ccw * orient(ax, ay, bx, by, qx, qy);
      if (dp >= 0) out.push(px, py);
      if (dp >= 0 !== dq >= 0) {
        const t = dp / (dp - dq);
        out.push(px + t * (qx - px), py + t * (qy - py));
      }
    }
  }
  return Math.abs(signedArea(Float64Array.from(out)));
}

/**
 * Area of the intersection of two simple polygons, convex or not (shapely's
 * `a.intersection(b).area`): each polygon is a signed sum of triangles fanned from its first vertex,
 * so the overlap is the signed sum of the triangle pairs' convex overlaps.
 */
export function polygonIntersectionArea(a: Coords, b: Coords): number {
  const fan = (p: Coords): { tri: Coords; sign: number }[] => {
    const out: { tri: Coords; sign: number }[] = [];
    for (let i = 1; i + 1 < vertexCount(p); i++) {
      const tri = Float64Array.of(p[0] as number, p[1] as number, p[2 * i] as number, p[2 * i + 1] as number, p[2 * i + 2] as number, p[2 * i + 3] as number);
      const area = signedArea(tri);
      if (area !== 0) out.push({ tri, sign: Math.sign(area) });
    }
    return out;
  };
  const fa = fan(a),
    fb = fan(b);
  let sum = 0;
  for (const ta of fa) for (const tb of fb) sum += ta.sign * tb.sign * convexIntersectionArea(ta.tri, tb.tri);
  return Math.abs(sum);
}

/**
 * The order in which a GEOS STR tree (shapely's `STRtree`, `capacity` children a node) reports the
 * items matching a query: the leaves of its sort-tile-recursive packing, each level sorted by
 * envelope centre x, cut into ceil(sqrt(ceil(n / capacity))) vertical slices, each slice sorted by
 * centre y and grouped by `capacity`. Returns item indices in that order. GEOS sorts with
 * `std::sort`, which is not stable: equal centres come out in the order libstdc++'s introsort
 * leaves them ({@link cppSort}), the input order only for up to 16 nodes.
 */
export function strTreeOrder(envelopes: readonly (readonly [number, number, number, number])[], capacity = 10): number[] {
  interface Node {
    env: readonly [number, number, number, number];
    item: number;
    children: Node[];
  }
  let level: Node[] = envelopes.map((env, item) => ({ env, item, children: [] }));
  while (level.length > 1) {
    const n = level.length;
    const perSlice = Math.ceil(n / Math.ceil(Math.sqrt(Math.ceil(n / capacity))));
    const byX = cppSort([...level], (a, b) => a.env[0] + a.env[2] < b.env[0] + b.env[2]);
    const parents: Node[] = [];
    for (let s = 0; s < n; s += perSlice) {
      const slice = cppSort(byX.slice(s, s + perSlice), (a, b) => a.env[1] + a.env[3] < b.env[1] + b.env[3]);
      for (let g = 0; g < slice.length; g += capacity) {
        const children = slice.slice(g, g + capacity);
        const env = [
          Math.min(...children.map((c) => c.env[0])),
          Math.min(...children.map((c) => c.env[1])),
          Math.max(...children.map((c) => c.env[2])),
          Math.max(...children.map((c) => c.env[3])),
        ] as const;
        parents.push({ env, item: -1, children });
      }
    }
    level = parents;
  }
  const out: number[] = [];
  const walk = (node: Node): void => {
    if (node.item >= 0) out.push(node.item);
    else node.children.forEach(walk);
  };
  level.forEach(walk);
  return out;
}

/** Below this many elements libstdc++'s introsort leaves a range to the final insertion sort (`_S_threshold`). */
const CPP_SORT_THRESHOLD = 16;

/**
 * libstdc++'s `std::sort` (GCC, what GEOS in shapely's wheels is built with), in place: introsort
 * with the median of the second, middle and last elements moved to the front as pivot, an
 * unguarded Hoare partition, heapsort past 2·log2(n) levels, then one insertion sort over the whole
 * range. Reproduced step for step because its order of equal elements is what GEOS reports.
 */
export function cppSort<T>(a: T[], less: (x: T, y: T) => boolean): T[] {
  const swap = (i: number, j: number): void => {
    const t = a[i] as T;
    a[i] = a[j] as T;
    a[j] = t;
  };
  const cmp = (i: number, j: number): boolean => less(a[i] as T, a[j] as T);
  const medianToFirst = (result: number, x: number, y: number, z: number): void => {
    if (cmp(x, y)) {
      if (cmp(y, z)) swap(result, y);
      else if (cmp(x, z)) swap(result, z);
      else swap(result, x);
    } else if (cmp(x, z)) swap(result, x);
    else if (cmp(y, z)) swap(result, z);
    else swap(result, y);
  };
  const partition = (first: number, last: number, pivot: number): number => {
    for (;;) {
      while (cmp(first, pivot)) first++;
      last--;
      while (cmp(pivot, last)) last--;
      if (!(first < last)) return first;
      swap(first, last);
      first++;
    }
  };
  const adjustHeap = (first: number, hole: number, len: number, value: T): void => {
    const top = hole;
    let child = hole;
    while (child < Math.trunc((len - 1) / 2)) {
      child = 2 * (child + 1);
      if (cmp(first + child, first + child - 1)) child--;
      a[first + hole] = a[first + child] as T;
      hole = child;
    }
    if ((len & 1) === 0 && child === Math.trunc((len - 2) / 2)) {
      child = 2 * (child + 1);
      a[first + hole] = a[first + child - 1] as T;
      hole = child - 1;
    }
    let parent = Math.trunc((hole - 1) / 2);
    while (hole > top && less(a[first + parent] as T, value)) {
      a[first + hole] = a[first + parent] as T;
      hole = parent;
      parent = Math.trunc((hole - 1) / 2);
    }
    a[first + hole] = value;
  };
  const heapSort = (first: number, last: number): void => {
    const len = last - first;
    if (len >= 2) for (let parent = Math.trunc((len - 2) / 2); parent >= 0; parent--) adjustHeap(first, parent, len, a[first + parent] as T);
    for (let end = last - 1; end - first > 0; end--) {
      const value = a[end] as T;
      a[end] = a[first] as T;
      adjustHeap(first, 0, end - first, value);
    }
  };
  const introsortLoop = (first: number, last: number, depth: number): void => {
    while (last - first > CPP_SORT_THRESHOLD) {
      if (depth === 0) {
        heapSort(first, last);
        return;
      }
      depth--;
      const mid = first + Math.trunc((last - first) / 2);
      medianToFirst(first, first + 1, mid, last - 1);
      const cut = partition(first + 1, last, first);
      introsortLoop(cut, last, depth);
      last = cut;
    }
  };
  const linearInsert = (i: number): void => {
    const value = a[i] as T;
    let j = i - 1;
    while (less(value, a[j] as T)) {
      a[j + 1] = a[j] as T;
      j--;
    }
    a[j + 1] = value;
  };
  const insertionSort = (first: number, last: number): void => {
    for (let i = first + 1; i < last; i++) {
      if (cmp(i, first)) {
        const value = a[i] as T;
        a.copyWithin(first + 1, first, i);
        a[first] = value;
      } else linearInsert(i);
    }
  };
  const n = a.length;
  if (n < 2) return a;
  introsortLoop(0, n, 2 * (31 - Math.clz32(n)));
  if (n > CPP_SORT_THRESHOLD) {
    insertionSort(0, CPP_SORT_THRESHOLD);
    for (let i = CPP_SORT_THRESHOLD; i < n; i++) linearInsert(i);
  } else insertionSort(0, n);
  return a;
}

/** Translates and rotates `local` coords (in a frame at x, y, heading) into world coords. */
export function toWorld(local: Coords, x: number, y: number, heading: number, out: Coords = new Float64Array(local.length)): Coords {
  const c = Math.cos(heading),
    s = Math.sin(heading);
  for (let i = 0; i < local.length; i += 2) {
    const lx = local[i] as number,
      ly = local[i + 1] as number;
    out[i] = x + c * lx - s * ly;
    out[i + 1] = y + s * lx + c * ly;
  }
  return out;
}

/** A pose in the plane. */
export interface Pose {
  x: number;
  y: number;
  heading: number;
}

/** Expresses world pose `p` in the frame of `origin` (nuPlan's `absolute_to_relative_poses`). */
export function relativePose(origin: Pose, p: Pose): Pose {
  const c = Math.cos(origin.heading),
    s = Math.sin(origin.heading);
  const dx = p.x - origin.x,
    dy = p.y - origin.y;
  return { x: c * dx + s * dy, y: -s * dx + c * dy, heading: normalizeAngle(p.heading - origin.heading) };
}

/** Maps pose `p`, given in the frame of `origin`, to world (nuPlan's `relative_to_absolute_poses`). */
export function absolutePose(origin: Pose, p: Pose): Pose {
  const c = Math.cos(origin.heading),
    s = Math.sin(origin.heading);
  return { x: origin.x + c * p.x - s * p.y, y: origin.y + s * p.x + c * p.y, heading: normalizeAngle(origin.heading + p.heading) };
}

/**
 * A polyline with arc-length parametrisation: projection of a point (arc length + signed lateral
 * offset, left positive) and interpolation of a pose at an arc length. Used for lane centrelines,
 * routes and PDM-Closed's centreline.
 */
export class Polyline {
  readonly coords: Coords;
  /** Cumulative arc length at each vertex. */
  readonly s: Float64Array;
  readonly length: number;

  constructor(coords: Coords) {
    if (coords.length < 4) throw new Error('a polyline needs at least two points');
    this.coords = coords;
    const n = coords.length >> 1;
    this.s = new Float64Array(n);
    for (let i = 1; i < n; i++) {
      this.s[i] =
        (this.s[i - 1] as number) +
        Math.hypot((coords[2 * i] as number) - (coords[2 * i - 2] as number), (coords[2 * i + 1] as number) - (coords[2 * i - 1] as number));
    }
    this.length = this.s[n - 1] as number;
  }

  get size(): number {
    return this.coords.length >> 1;
  }

  /** Closest point: arc length `s`, signed lateral offset `d` (left positive), squared distance. */
  project(px: number, py: number): { s: number; d: number; dist2: number; segment: number } {
    const c = this.coords;
    const n = c.length >> 1;
    let best = Infinity,
      bestS = 0,
      bestD = 0,
      bestSeg = 0;
    for (let i = 0; i < n - 1; i++) {
      const ax = c[2 * i] as number,
        ay = c[2 * i + 1] as number;
      const dx = (c[2 * i + 2] as number) - ax,
        dy = (c[2 * i + 3] as number) - ay;
      const len2 = dx * dx + dy * dy;
      let t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
      if (t < 0) t = 0;
      else if (t > 1) t = 1;
      const qx = ax + t * dx,
        qy = ay + t * dy;
      const d2 = (px - qx) * (px - qx) + (py - qy) * (py - qy);
      if (d2 < best) {
        best = d2;
        bestSeg = i;
        bestS = (this.s[i] as number) + t * Math.sqrt(len2);
        const cross = dx * (py - ay) - dy * (px - ax);
        bestD = (cross >= 0 ? 1 : -1) * Math.sqrt(d2);
      }
    }
    return { s: bestS, d: bestD, dist2: best, segment: bestSeg };
  }

  /** Pose at arc length `s` (clamped to the ends); heading of the segment it falls on. */
  interpolate(s: number): Pose {
    const c = this.coords;
    const n = c.length >> 1;
    if (s <= 0) return { x: c[0] as number, y: c[1] as number, heading: this.segmentHeading(0) };
    if (s >= this.length) return { x: c[2 * n - 2] as number, y: c[2 * n - 1] as number, heading: this.segmentHeading(n - 2) };
    let lo = 0,
      hi = n - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((this.s[mid] as number) <= s) lo = mid;
      else hi = mid;
    }
    const s0 = this.s[lo] as number,
      s1 = this.s[hi] as number;
    const t = s1 > s0 ? (s - s0) / (s1 - s0) : 0;
    return {
      x: (c[2 * lo] as number) + t * ((c[2 * hi] as number) - (c[2 * lo] as number)),
      y: (c[2 * lo + 1] as number) + t * ((c[2 * hi + 1] as number) - (c[2 * lo + 1] as number)),
      heading: this.segmentHeading(lo),
    };
  }

  segmentHeading(i: number): number {
    const c = this.coords;
    return Math.atan2((c[2 * i + 3] as number) - (c[2 * i + 1] as number), (c[2 * i + 2] as number) - (c[2 * i] as number));
  }
}

/**
 * A uniform grid over axis-aligned bounds, mapping cells to item indices. Queries return candidate
 * items whose bounds overlap the query; callers run the exact test. Good for map elements (hundreds)
 * and agents (tens), where building is cheap and queries dominate.
 */
export class GridIndex {
  private readonly cells = new Map<number, number[]>();
  private readonly itemBounds: [number, number, number, number][] = [];
  private readonly seen: Uint32Array;
  private stamp = 0;

  constructor(
    boxes: readonly [number, number, number, number][],
    readonly cellSize = 20,
  ) {
    this.itemBounds = boxes.slice();
    this.seen = new Uint32Array(boxes.length);
    boxes.forEach((b, idx) => {
      for (let cx = Math.floor(b[0] / cellSize); cx <= Math.floor(b[2] / cellSize); cx++) {
        for (let cy = Math.floor(b[1] / cellSize); cy <= Math.floor(b[3] / cellSize); cy++) {
          const key = cellKey(cx, cy);
          const list = this.cells.get(key);
          if (list) list.push(idx);
          else this.cells.set(key, [idx]);
        }
      }
    });
  }

  /** Items whose bounds overlap the query rectangle, each once. */
  query(minX: number, minY: number, maxX: number, maxY: number, out: number[] = []): number[] {
    out.length = 0;
    this.stamp = (this.stamp + 1) >>> 0;
    if (this.stamp === 0) {
      this.seen.fill(0);
      this.stamp = 1;
    }
    const cs = this.cellSize;
    for (let cx = Math.floor(minX / cs); cx <= Math.floor(maxX / cs); cx++) {
      for (let cy = Math.floor(minY / cs); cy <= Math.floor(maxY / cs); cy++) {
        const list = this.cells.get(cellKey(cx, cy));
        if (!list) continue;
        for (const idx of list) {
          if (this.seen[idx] === this.stamp) continue;
          this.seen[idx] = this.stamp;
          const b = this.itemBounds[idx] as [number, number, number, number];
          if (b[0] <= maxX && b[2] >= minX && b[1] <= maxY && b[3] >= minY) out.push(idx);
        }
      }
    }
    return out;
  }

  /** Items whose bounds contain the point. */
  queryPoint(x: number, y: number, out: number[] = []): number[] {
    return this.query(x, y, x, y, out);
  }
}

function cellKey(cx: number, cy: number): number {
  // Map two signed cell coordinates (|c| < 2^20) to one safe integer key.
  return (cx + 1048576) * 2097152 + (cy + 1048576);
}

/**
 * A polygon prepared for many point-in-polygon queries: a coarse raster over its bounds marks cells
 * as outside, inside or boundary (an edge passes through or next to it), built lazily on the first
 * query; only boundary cells fall back to the exact even-odd test. Same answers as
 * {@link pointInPolygon}, an order of magnitude faster on long lane polygons.
 */
export class PreparedPolygon {
  private raster: Uint8Array | null = null;
  private readonly minX: number;
  private readonly minY: number;
  private readonly maxX: number;
  private readonly maxY: number;
  private cols = 0;
  private rows = 0;
  private queries = 0;

  constructor(
    readonly coords: Coords,
    readonly cell = 0.5,
  ) {
    [this.minX, this.minY, this.maxX, this.maxY] = bounds(coords);
  }

  /** True when the point lies in the polygon; `edge` says where boundary points fall (see {@link Edge}). */
  contains(px: number, py: number, edge: Edge = 'inside'): boolean {
    if (px < this.minX || px > this.maxX || py < this.minY || py > this.maxY) return false;
    // Small polygons and the first few queries go straight to the exact test.
    if (this.raster === null) {
      if (++this.queries < 8 || vertexCount(this.coords) < 12) return pointInPolygon(px, py, this.coords, edge);
      this.build();
    }
    const c = Math.floor((px - this.minX) / this.cell),
      r = Math.floor((py - this.minY) / this.cell);
    const v = (this.raster as Uint8Array)[r * this.cols + c];
    // Inside cells lie a whole cell away from every edge, so the edge rule only matters in boundary cells.
    if (v === 1) return true;
    if (v === 0) return false;
    return pointInPolygon(px, py, this.coords, edge);
  }

  private build(): void {
    const cell = this.cell;
    this.cols = Math.floor((this.maxX - this.minX) / cell) + 1;
    this.rows = Math.floor((this.maxY - this.minY) / cell) + 1;
    const R = new Uint8Array(this.cols * this.rows);
    const p = this.coords;
    const n = vertexCount(p);
    const xs: number[] = [];
    for (let r = 0; r < this.rows; r++) {
      const y = this.minY + (r + 0.5) * cell;
      xs.length = 0;
      for (let i = 0, j = n - 1; i < n; j = i++) {
        const yi = p[2 * i + 1] as number,
          yj = p[2 * j + 1] as number;
        if (yi > y !== yj > y) xs.push((p[2 * i] as number) + ((y - yi) * ((p[2 * j] as number) - (p[2 * i] as number))) / (yj - yi));
      }
      xs.sort((a, b) => a - b);
      for (let k = 0; k + 1 < xs.length; k += 2) {
        const c0 = Math.max(0, Math.ceil(((xs[k] as number) - this.minX) / cell - 0.5));
        const c1 = Math.min(this.cols - 1, Math.floor(((xs[k + 1] as number) - this.minX) / cell - 0.5));
        for (let c = c0; c <= c1; c++) R[r * this.cols + c] = 1;
      }
    }
    for (let i = 0, j = n - 1; i < n; j = i++) {
      const ax = p[2 * j] as number,
        ay = p[2 * j + 1] as number,
        bx = p[2 * i] as number,
        by = p[2 * i + 1] as number;
      const steps = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / (cell * 0.25)));
      for (let k = 0; k <= steps; k++) {
        const cx = Math.floor((ax + ((bx - ax) * k) / steps - this.minX) / cell),
          cy = Math.floor((ay + ((by - ay) * k) / steps - this.minY) / cell);
        for (let dy = -1; dy <= 1; dy++) {
          for (let dx = -1; dx <= 1; dx++) {
            const x = cx + dx,
              y = cy + dy;
            if (x >= 0 && y >= 0 && x < this.cols && y < this.rows) R[y * this.cols + x] = 2;
          }
        }
      }
    }
    this.raster = R;
  }
}
