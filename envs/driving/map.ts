/**
 * The lane-graph map shared by the driving envs, modelled on nuPlan's map API: lanes and lane
 * connectors (lanes inside junctions) grouped into roadblocks and roadblock connectors, with
 * intersections, carparks, extra drivable-area polygons, crosswalks, stop signs and the lane
 * connectors that traffic lights control. `MapData` is plain JSON (the scene-file form, snake_case
 * as in docs/navsim-scenes.md); `DrivingMap` indexes it for queries.
 *
 * `onDrivableArea` is the union of roadblocks, roadblock connectors, intersections, carparks and
 * `drivable_areas` (what is drawn as road). NAVSIM's scoring uses its own, narrower layers
 * (`proximalAreaMap` in envs/navsim/pdm.ts). Points on a boundary count as inside unless a query
 * is asked for `'outside'` (NAVSIM's scorer tests points with shapely's `contains`).
 *
 * @example
 * const map = new DrivingMap(data);
 * map.lanesAt(10, -1.75);            // ['a_r']
 * map.nearestLane(10, -1.2)?.lane.id; // 'a_r'
 * map.onDrivableArea(10, 20);         // false
 */
import type { Coords, Edge } from './geometry.ts';
import { GridIndex, Polyline, PreparedPolygon, bounds, coordsFrom, polygonsIntersect } from './geometry.ts';

/** [x, y] pairs, as scene files store them. */
export type Points = number[][];

export interface RoadblockData {
  id: string;
  kind: 'roadblock' | 'roadblock_connector';
  polygon: Points;
  incoming: string[];
  outgoing: string[];
}

export interface LaneData {
  id: string;
  roadblock_id: string;
  polygon: Points;
  centerline: Points;
  speed_limit_mps: number | null;
  incoming: string[];
  outgoing: string[];
  left_boundary?: Points;
  right_boundary?: Points;
  /** Adjacent same-direction lanes, for lane changes. */
  left_neighbour?: string | null;
  right_neighbour?: string | null;
}

export interface AreaData {
  id: string;
  polygon: Points;
}

export interface StopSignData {
  id: string;
  /** Stop-line region. */
  polygon: Points;
  lane_ids: string[];
}

export interface MapData {
  name: string;
  roadblocks: RoadblockData[];
  lanes: LaneData[];
  intersections: AreaData[];
  carparks: AreaData[];
  drivable_areas: AreaData[];
  crosswalks?: AreaData[];
  stop_signs?: StopSignData[];
}

/** An indexed lane: `kind` is 'lane_connector' when its roadblock is a roadblock connector. */
export interface Lane {
  id: string;
  kind: 'lane' | 'lane_connector';
  roadblockId: string;
  polygon: Coords;
  centerline: Polyline;
  leftBoundary: Coords | null;
  rightBoundary: Coords | null;
  speedLimit: number | null;
  incoming: string[];
  outgoing: string[];
  leftNeighbour: string | null;
  rightNeighbour: string | null;
}

export interface Roadblock {
  id: string;
  kind: 'roadblock' | 'roadblock_connector';
  polygon: Coords;
  laneIds: string[];
  incoming: string[];
  outgoing: string[];
}

export interface Area {
  id: string;
  polygon: Coords;
}

/** Query-ready map. Build once per scene (milliseconds for a few hundred lanes). */
export class DrivingMap {
  readonly data: MapData;
  readonly lanes = new Map<string, Lane>();
  readonly roadblocks = new Map<string, Roadblock>();
  readonly intersections: Area[];
  readonly carparks: Area[];
  readonly drivableAreas: Area[];
  readonly crosswalks: Area[];
  readonly stopSigns: (Area & { laneIds: string[] })[];
  private readonly laneList: Lane[];
  private readonly lanePrepared: PreparedPolygon[];
  private readonly drivablePrepared: PreparedPolygon[];
  private readonly intersectionPrepared: PreparedPolygon[];
  private readonly laneIndex: GridIndex;
  /** Polygons whose union is the drivable area. */
  readonly drivablePolygons: { id: string; polygon: Coords }[];
  private readonly drivableIndex: GridIndex;
  private readonly intersectionIndex: GridIndex;
  private readonly scratch: number[] = [];

  constructor(data: MapData) {
    this.data = data;
    for (const rb of data.roadblocks) {
      this.roadblocks.set(rb.id, { id: rb.id, kind: rb.kind, polygon: coordsFrom(rb.polygon), laneIds: [], incoming: rb.incoming, outgoing: rb.outgoing });
    }
    for (const l of data.lanes) {
      const rb = this.roadblocks.get(l.roadblock_id);
      rb?.laneIds.push(l.id);
      this.lanes.set(l.id, {
        id: l.id,
        kind: rb?.kind === 'roadblock_connector' ? 'lane_connector' : 'lane',
        roadblockId: l.roadblock_id,
        polygon: coordsFrom(l.polygon),
        centerline: new Polyline(coordsFrom(l.centerline)),
        leftBoundary: l.left_boundary ? coordsFrom(l.left_boundary) : null,
        rightBoundary: l.right_boundary ? coordsFrom(l.right_boundary) : null,
        speedLimit: l.speed_limit_mps,
        incoming: l.incoming,
        outgoing: l.outgoing,
        leftNeighbour: l.left_neighbour ?? null,
        rightNeighbour: l.right_neighbour ?? null,
      });
    }
    const area = (a: AreaData): Area => ({ id: a.id, polygon: coordsFrom(a.polygon) });
    this.intersections = data.intersections.map(area);
    this.carparks = data.carparks.map(area);
    this.drivableAreas = data.drivable_areas.map(area);
    this.crosswalks = (data.crosswalks ?? []).map(area);
    this.stopSigns = (data.stop_signs ?? []).map((s) => ({ ...area(s), laneIds: s.lane_ids }));
    this.laneList = [...this.lanes.values()];
    this.laneIndex = new GridIndex(this.laneList.map((l) => bounds(l.polygon)));
    this.lanePrepared = this.laneList.map((l) => new PreparedPolygon(l.polygon));
    this.drivablePolygons = [
      ...[...this.roadblocks.values()].map((r) => ({ id: r.id, polygon: r.polygon })),
      ...this.intersections,
      ...this.carparks,
      ...this.drivableAreas,
    ];
    this.drivableIndex = new GridIndex(this.drivablePolygons.map((p) => bounds(p.polygon)));
    this.drivablePrepared = this.drivablePolygons.map((p) => new PreparedPolygon(p.polygon));
    this.intersectionPrepared = this.intersections.map((p) => new PreparedPolygon(p.polygon));
    this.intersectionIndex = new GridIndex(this.intersections.map((p) => bounds(p.polygon)));
  }

  /** All lanes and lane connectors. */
  allLanes(): readonly Lane[] {
    return this.laneList;
  }

  lane(id: string): Lane | undefined {
    return this.lanes.get(id);
  }

  /** Ids of lanes / lane connectors whose polygon contains the point (`edge`: where boundary points fall). */
  lanesAt(x: number, y: number, edge: Edge = 'inside'): string[] {
    const out: string[] = [];
    for (const i of this.laneIndex.queryPoint(x, y, this.scratch)) {
      if ((this.lanePrepared[i] as PreparedPolygon).contains(x, y, edge)) out.push((this.laneList[i] as Lane).id);
    }
    return out;
  }

  /** Ids of lanes whose polygon intersects `poly`. */
  lanesIntersecting(poly: Coords): string[] {
    const [a, b, c, d] = bounds(poly);
    const out: string[] = [];
    for (const i of this.laneIndex.query(a, b, c, d, this.scratch)) {
      const l = this.laneList[i] as Lane;
      if (polygonsIntersect(l.polygon, poly)) out.push(l.id);
    }
    return out;
  }

  /**
   * Nearest lane by centreline distance. With `heading`, lanes pointing more than 90 degrees away
   * are skipped (so the opposite carriageway is not picked). Searches within `radius` metres.
   */
  nearestLane(x: number, y: number, heading?: number, radius = 30): { lane: Lane; s: number; d: number; distance: number } | null {
    let best: { lane: Lane; s: number; d: number; distance: number } | null = null;
    for (const i of this.laneIndex.query(x - radius, y - radius, x + radius, y + radius, this.scratch)) {
      const l = this.laneList[i] as Lane;
      const p = l.centerline.project(x, y);
      const dist = Math.sqrt(p.dist2);
      if (heading !== undefined) {
        const h = l.centerline.segmentHeading(p.segment);
        if (Math.cos(h - heading) < 0) continue;
      }
      if (!best || dist < best.distance) best = { lane: l, s: p.s, d: p.d, distance: dist };
    }
    return best;
  }

  /** True when the point lies in the drivable area (any roadblock, intersection, carpark or area). */
  onDrivableArea(x: number, y: number): boolean {
    for (const i of this.drivableIndex.queryPoint(x, y, this.scratch)) {
      if ((this.drivablePrepared[i] as PreparedPolygon).contains(x, y)) return true;
    }
    return false;
  }

  /** True when the point lies in an intersection polygon (`edge`: where boundary points fall). */
  inIntersection(x: number, y: number, edge: Edge = 'inside'): boolean {
    for (const i of this.intersectionIndex.queryPoint(x, y, this.scratch)) {
      if ((this.intersectionPrepared[i] as PreparedPolygon).contains(x, y, edge)) return true;
    }
    return false;
  }

  /** True when `poly` touches any intersection polygon. */
  intersectsIntersection(poly: Coords): boolean {
    const [a, b, c, d] = bounds(poly);
    for (const i of this.intersectionIndex.query(a, b, c, d, this.scratch)) {
      if (polygonsIntersect((this.intersections[i] as Area).polygon, poly)) return true;
    }
    return false;
  }

  /** Lanes of the given roadblocks, in roadblock order. */
  lanesOfRoadblocks(roadblockIds: readonly string[]): Lane[] {
    const out: Lane[] = [];
    for (const id of roadblockIds) for (const lid of this.roadblocks.get(id)?.laneIds ?? []) out.push(this.lanes.get(lid) as Lane);
    return out;
  }
}
