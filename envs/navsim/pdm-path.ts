/**
 * PDM-Closed's paths as NAVSIM builds them (`pdm_path.py`, `pdm_geometry_utils.py`,
 * `pdm_generator.py`): a discrete path of (x, y, heading) states made of the route lanes' baseline
 * paths laid end to end, with nuPlan's per-point headings (towards the next point; the last point
 * repeats the one before) and both copies of every lane-join point kept; parallel offset paths
 * shifted along each state's own heading; arc-length interpolation as scipy's `interp1d` does it
 * over the unwrapped headings; and the driving corridor, the path ahead buffered by half the ego
 * width with square caps.
 *
 * @example
 * const path = new SE2Path(discreteCenterline(lanes));
 * path.interpolate(12.5); // [x, y, heading]
 */
import type { Coords } from '../driving/geometry.ts';
import { Polyline, boxCorners, normalizeAngle, polygonsIntersect, segmentIntersectsPolygon } from '../driving/geometry.ts';
import type { Lane } from '../driving/map.ts';

/** Flat (x, y, heading) triples. */
export type DiscretePath = Float64Array;

/** nuPlan's baseline-path headings: towards the successor point, the last repeating the one before. */
export function baselineHeadings(c: Coords): Float64Array {
  const n = c.length / 2;
  const h = new Float64Array(n);
  for (let i = 0; i + 1 < n; i++) h[i] = Math.atan2((c[2 * i + 3] as number) - (c[2 * i + 1] as number), (c[2 * i + 2] as number) - (c[2 * i] as number));
  if (n >= 2) h[n - 1] = h[n - 2] as number;
  return h;
}

/** The lanes' baseline paths end to end; the shared point of two lanes stays twice, each with its own heading. */
export function discreteCenterline(lanes: readonly Lane[]): DiscretePath {
  const out: number[] = [];
  for (const l of lanes) {
    const c = l.centerline.coords;
    const h = baselineHeadings(c);
    for (let i = 0; i < h.length; i++) out.push(c[2 * i] as number, c[2 * i + 1] as number, h[i] as number);
  }
  return Float64Array.from(out);
}

/** `parallel_discrete_path`: each state moved `offset` metres to its left, heading kept. */
export function parallelPath(path: DiscretePath, offset: number): DiscretePath {
  const out = new Float64Array(path.length);
  for (let i = 0; i < path.length; i += 3) {
    const theta = (path[i + 2] as number) + Math.PI / 2;
    out[i] = (path[i] as number) + Math.cos(theta) * offset;
    out[i + 1] = (path[i + 1] as number) + Math.sin(theta) * offset;
    out[i + 2] = path[i + 2] as number;
  }
  return out;
}

/** numpy's `unwrap` (discont pi, period 2 pi). */
export function unwrapAngles(a: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(a as ArrayLike<number>);
  let correction = 0;
  for (let i = 1; i < out.length; i++) {
    const d = (a[i] as number) - (a[i - 1] as number);
    let dd = ((((d + Math.PI) % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) - Math.PI;
    if (dd === -Math.PI && d > 0) dd = Math.PI;
    let c = dd - d;
    if (Math.abs(d) < Math.PI) c = 0;
    correction += c;
    out[i] = (a[i] as number) + correction;
  }
  return out;
}

/** `PDMPath`: progress-indexed interpolation of a discrete SE2 path. */
export class SE2Path {
  readonly size: number;
  readonly progress: Float64Array;
  readonly length: number;
  /** The (x, y) linestring, all points kept (shapely's `linestring`). */
  readonly line: Polyline;
  private readonly states: Float64Array;

  constructor(readonly discrete: DiscretePath) {
    this.size = discrete.length / 3;
    const xy = new Float64Array(this.size * 2);
    const headings = new Float64Array(this.size);
    for (let i = 0; i < this.size; i++) {
      xy[2 * i] = discrete[3 * i] as number;
      xy[2 * i + 1] = discrete[3 * i + 1] as number;
      headings[i] = discrete[3 * i + 2] as number;
    }
    const unwrapped = unwrapAngles(headings);
    this.states = new Float64Array(discrete);
    for (let i = 0; i < this.size; i++) this.states[3 * i + 2] = unwrapped[i] as number;
    this.line = new Polyline(xy);
    this.progress = this.line.s;
    this.length = this.progress[this.size - 1] as number;
  }

  /** shapely's `project`: arc length of the closest point. */
  project(x: number, y: number): number {
    return this.line.project(x, y).s;
  }

  /**
   * (x, y, heading) at `distance`, clipped to [1e-5, length]; scipy's linear `interp1d` picks the
   * segment by a left-sided search, so a zero-length segment at a lane join is never used.
   */
  interpolate(distance: number): [number, number, number] {
    const d = Math.min(Math.max(distance, 1e-5), this.length);
    const p = this.progress;
    let lo = 0,
      hi = this.size; // first index with p[i] >= d
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((p[mid] as number) < d) lo = mid + 1;
      else hi = mid;
    }
    const idx = Math.min(Math.max(lo, 1), this.size - 1);
    const a = idx - 1,
      b = idx;
    const xa = p[a] as number,
      xb = p[b] as number;
    const s = this.states;
    const out: [number, number, number] = [0, 0, 0];
    for (let k = 0; k < 3; k++) {
      const ya = s[3 * a + k] as number,
        yb = s[3 * b + k] as number;
      const v = ((yb - ya) / (xb - xa)) * (d - xa) + ya;
      out[k] = Number.isNaN(v) ? 0 : v;
    }
    out[2] = normalizeAngle(out[2]);
    return out;
  }

  /** `PDMPath.substring`: the discrete points with progress in [start, end], else shapely's interpolated substring. */
  substring(start: number, end: number): Float64Array {
    const s0 = Math.min(Math.max(start, 0), this.length),
      s1 = Math.min(Math.max(end, 0), this.length);
    const pts: number[] = [];
    for (let i = 0; i < this.size; i++) {
      const pi = this.progress[i] as number;
      if (s0 <= pi && pi <= s1) pts.push(this.discrete[3 * i] as number, this.discrete[3 * i + 1] as number);
    }
    if (pts.length > 2) return Float64Array.from(pts);
    const a = this.line.interpolate(s0),
      b = this.line.interpolate(s1);
    const out: number[] = [a.x, a.y];
    for (let i = 0; i < this.size; i++) {
      const pi = this.progress[i] as number;
      if (pi > s0 && pi < s1) out.push(this.discrete[3 * i] as number, this.discrete[3 * i + 1] as number);
    }
    out.push(b.x, b.y);
    return Float64Array.from(out);
  }
}

function segDist2(px: number, py: number, ax: number, ay: number, bx: number, by: number): number {
  const dx = bx - ax,
    dy = by - ay;
  const l2 = dx * dx + dy * dy;
  let t = l2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0;
  t = Math.max(0, Math.min(1, t));
  const qx = ax + t * dx - px,
    qy = ay + t * dy - py;
  return qx * qx + qy * qy;
}

/** Distance between two polygons (0 when they intersect), shapely's `distance`. */
export function polygonDistance(a: Coords, b: Coords): number {
  if (polygonsIntersect(a, b)) return 0;
  let best = Infinity;
  const na = a.length / 2,
    nb = b.length / 2;
  for (let i = 0; i < na; i++) {
    for (let j = 0; j < nb; j++) {
      const k = (j + 1) % nb;
      best = Math.min(
        best,
        segDist2(a[2 * i] as number, a[2 * i + 1] as number, b[2 * j] as number, b[2 * j + 1] as number, b[2 * k] as number, b[2 * k + 1] as number),
      );
    }
  }
  for (let i = 0; i < nb; i++) {
    for (let j = 0; j < na; j++) {
      const k = (j + 1) % na;
      best = Math.min(
        best,
        segDist2(b[2 * i] as number, b[2 * i + 1] as number, a[2 * j] as number, a[2 * j + 1] as number, a[2 * k] as number, a[2 * k + 1] as number),
      );
    }
  }
  return Math.sqrt(best);
}

/** Distance from a polygon to a polyline (0 when they touch). */
function polygonToPolyline(poly: Coords, pts: Coords): number {
  let best = Infinity;
  const n = poly.length / 2;
  for (let i = 0; i + 3 < pts.length; i += 2) {
    const ax = pts[i] as number,
      ay = pts[i + 1] as number,
      bx = pts[i + 2] as number,
      by = pts[i + 3] as number;
    if (segmentIntersectsPolygon(ax, ay, bx, by, poly)) return 0;
    for (let k = 0; k < n; k++) {
      best = Math.min(best, segDist2(poly[2 * k] as number, poly[2 * k + 1] as number, ax, ay, bx, by));
      const l = (k + 1) % n;
      best = Math.min(best, segDist2(ax, ay, poly[2 * k] as number, poly[2 * k + 1] as number, poly[2 * l] as number, poly[2 * l + 1] as number));
    }
  }
  return Math.sqrt(best);
}

/**
 * The driving corridor: `line.buffer(halfWidth, cap_style=square)`, i.e. every point within
 * `halfWidth` of the line (round joins) plus a square of side 2·halfWidth past each end. Kept as
 * the line and its two end caps so tests stay exact rather than polygonised.
 */
export class Corridor {
  private readonly caps: Coords[] = [];
  readonly bounds: [number, number, number, number];

  constructor(
    readonly line: Coords,
    readonly halfWidth: number,
  ) {
    const n = line.length / 2;
    // Square caps follow the first and last segments of non-zero length (GEOS drops repeated points).
    const end = (from: number, step: number): void => {
      const x0 = line[2 * from] as number,
        y0 = line[2 * from + 1] as number;
      for (let j = from + step; j >= 0 && j < n; j += step) {
        const dx = x0 - (line[2 * j] as number),
          dy = y0 - (line[2 * j + 1] as number);
        const len = Math.hypot(dx, dy);
        if (len === 0) continue;
        const h = Math.atan2(dy, dx);
        this.caps.push(
          boxCorners({ x: x0 + (Math.cos(h) * halfWidth) / 2, y: y0 + (Math.sin(h) * halfWidth) / 2, heading: h, length: halfWidth, width: 2 * halfWidth }),
        );
        return;
      }
    };
    end(n - 1, -1);
    end(0, 1);
    let minX = Infinity,
      minY = Infinity,
      maxX = -Infinity,
      maxY = -Infinity;
    for (let i = 0; i < n; i++) {
      const x = line[2 * i] as number,
        y = line[2 * i + 1] as number;
      minX = Math.min(minX, x);
      maxX = Math.max(maxX, x);
      minY = Math.min(minY, y);
      maxY = Math.max(maxY, y);
    }
    const r = halfWidth * Math.SQRT2;
    this.bounds = [minX - r, minY - r, maxX + r, maxY + r];
  }

  /** True when `poly` touches the corridor. */
  intersects(poly: Coords, polyBounds: [number, number, number, number]): boolean {
    const b = this.bounds;
    if (polyBounds[2] < b[0] || polyBounds[0] > b[2] || polyBounds[3] < b[1] || polyBounds[1] > b[3]) return false;
    if (this.line.length >= 4 && polygonToPolyline(poly, this.line) <= this.halfWidth) return true;
    return this.caps.some((c) => polygonsIntersect(c, poly));
  }
}
