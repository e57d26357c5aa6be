/**
 * A semantic raster of the map in world coordinates (road, lane markings, crosswalks, stop lines,
 * intersections), built once per map and sampled by the cameras (ground hits), the BEV raster and
 * the LiDAR (ground intensity). Polygons are scan-filled, lines stamped at half-cell steps; all in
 * typed arrays, tens of milliseconds for a few hundred lanes.
 *
 * @example
 * const grid = SemanticGrid.fromMap(map);
 * grid.classAt(10, -1.75); // SEM.ROAD
 */
import type { Coords } from '../geometry.ts';
import { bounds, vertexCount } from '../geometry.ts';
import type { DrivingMap } from '../map.ts';

/** Semantic classes of ground cells. */
export const SEM = { OFFROAD: 0, ROAD: 1, MARKING: 2, CROSSWALK: 3, STOP_LINE: 4, INTERSECTION: 5 } as const;

export class SemanticGrid {
  readonly data: Uint8Array;

  constructor(
    readonly originX: number,
    readonly originY: number,
    readonly cell: number,
    readonly width: number,
    readonly height: number,
  ) {
    this.data = new Uint8Array(width * height);
  }

  /**
   * Rasterises `map` over its bounds plus `margin` metres. The cell size grows past `cell` when
   * the map is large so the grid stays under `maxCells` cells per side.
   */
  static fromMap(map: DrivingMap, opts: { cell?: number; margin?: number; maxCells?: number } = {}): SemanticGrid {
    const margin = opts.margin ?? 30;
    let minX = Infinity,
      minY = Infinity,
      maxX = -Infinity,
      maxY = -Infinity;
    for (const p of map.drivablePolygons) {
      const [a, b, c, d] = bounds(p.polygon);
      minX = Math.min(minX, a);
      minY = Math.min(minY, b);
      maxX = Math.max(maxX, c);
      maxY = Math.max(maxY, d);
    }
    if (!Number.isFinite(minX)) {
      minX = -50;
      minY = -50;
      maxX = 50;
      maxY = 50;
    }
    minX -= margin;
    minY -= margin;
    maxX += margin;
    maxY += margin;
    const maxCells = opts.maxCells ?? 2048;
    const cell = Math.max(opts.cell ?? 0.25, (maxX - minX) / maxCells, (maxY - minY) / maxCells);
    const g = new SemanticGrid(minX, minY, cell, Math.ceil((maxX - minX) / cell), Math.ceil((maxY - minY) / cell));
    for (const p of map.drivablePolygons) g.fillPolygon(p.polygon, SEM.ROAD);
    for (const a of map.intersections) g.fillPolygon(a.polygon, SEM.INTERSECTION);
    for (const a of map.crosswalks) g.fillPolygon(a.polygon, SEM.CROSSWALK, true);
    for (const l of map.allLanes()) {
      if (l.kind === 'lane_connector') continue;
      if (l.leftBoundary) g.strokePolyline(l.leftBoundary, SEM.MARKING, false);
      if (l.rightBoundary) g.strokePolyline(l.rightBoundary, SEM.MARKING, false);
      if (!l.leftBoundary && !l.rightBoundary) g.strokePolyline(l.polygon, SEM.MARKING, true);
    }
    for (const s of map.stopSigns) g.fillPolygon(s.polygon, SEM.STOP_LINE);
    return g;
  }

  /** Class of the cell containing world point (x, y); OFFROAD outside the grid. */
  classAt(x: number, y: number): number {
    const cx = Math.floor((x - this.originX) / this.cell);
    const cy = Math.floor((y - this.originY) / this.cell);
    if (cx < 0 || cy < 0 || cx >= this.width || cy >= this.height) return SEM.OFFROAD;
    return this.data[cy * this.width + cx] as number;
  }

  /** Even-odd scanline fill; `stripes` leaves every other metre empty (crosswalk zebra). */
  fillPolygon(poly: Coords, value: number, stripes = false): void {
    const n = vertexCount(poly);
    if (n < 3) return;
    let minY = Infinity,
      maxY = -Infinity;
    for (let i = 0; i < n; i++) {
      const y = poly[2 * i + 1] as number;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    const r0 = Math.max(0, Math.floor((minY - this.originY) / this.cell));
    const r1 = Math.min(this.height - 1, Math.ceil((maxY - this.originY) / this.cell));
    const xs: number[] = [];
    for (let r = r0; r <= r1; r++) {
      const wy = this.originY + (r + 0.5) * this.cell;
      xs.length = 0;
      for (let i = 0, j = n - 1; i < n; j = i++) {
        const yi = poly[2 * i + 1] as number,
          yj = poly[2 * j + 1] as number;
        if (yi > wy !== yj > wy) {
          const xi = poly[2 * i] as number,
            xj = poly[2 * j] as number;
          xs.push(xi + ((wy - yi) * (xj - xi)) / (yj - yi));
        }
      }
      xs.sort((a, b) => a - b);
      for (let k = 0; k + 1 < xs.length; k += 2) {
        const c0 = Math.max(0, Math.ceil(((xs[k] as number) - this.originX) / this.cell - 0.5));
        const c1 = Math.min(this.width - 1, Math.floor(((xs[k + 1] as number) - this.originX) / this.cell - 0.5));
        const row = r * this.width;
        for (let c = c0; c <= c1; c++) {
          if (stripes) {
            const wx = this.originX + (c + 0.5) * this.cell;
            if ((Math.floor(wx * 1.5) + Math.floor(wy * 1.5)) % 2 !== 0) continue;
          }
          this.data[row + c] = value;
        }
      }
    }
  }

  /** Stamps a one-cell-wide line along a polyline (closed when `closed`). */
  strokePolyline(coords: Coords, value: number, closed: boolean): void {
    const n = coords.length >> 1;
    const segs = closed ? n : n - 1;
    for (let i = 0; i < segs; i++) {
      const j = (i + 1) % n;
      const ax = coords[2 * i] as number,
        ay = coords[2 * i + 1] as number;
      const bx = coords[2 * j] as number,
        by = coords[2 * j + 1] as number;
      const len = Math.hypot(bx - ax, by - ay);
      const steps = Math.max(1, Math.ceil(len / (this.cell * 0.5)));
      for (let k = 0; k <= steps; k++) {
        const t = k / steps;
        const cx = Math.floor((ax + t * (bx - ax) - this.originX) / this.cell);
        const cy = Math.floor((ay + t * (by - ay) - this.originY) / this.cell);
        if (cx >= 0 && cy >= 0 && cx < this.width && cy < this.height) this.data[cy * this.width + cx] = value;
      }
    }
  }
}
