/**
 * The PDM Score (NAVSIM v1) and the Extended PDM Score (v2), re-implemented from NAVSIM's
 * `PDMScorer` (v1.1 @3e8291b and main @0a380a9): per-step ego areas (multiple lanes, non-drivable,
 * oncoming), at-fault collisions with nuPlan's classification, drivable-area compliance, driving-
 * direction compliance, time-to-collision over projections at 0, 0.3, 0.6 and 0.9 s, progress
 * along the PDM centreline normalised by the best proposal (PDM-Closed or the agent), comfort, and
 * for v2 traffic-light compliance, lane keeping, history comfort and the human penalty filter.
 * Proposals are scored together, as NAVSIM scores PDM-Closed (index 0) and the agent (index 1).
 *
 * @example
 * const world = buildWorld(scene, 2);
 * const result = scoreProposals([pdmStates, agentStates], world, { version: 2 });
 * result.proposals[1].pdms;
 */
import type { AgentTrack } from '../driving/agents.ts';
import { isStaticType, makeTrack, sampleIndex } from '../driving/agents.ts';
import type { VehicleParameters } from '../driving/bicycle.ts';
import { PACIFICA, S, STATE_SIZE } from '../driving/bicycle.ts';
import { comfortChecks } from '../driving/comfort.ts';
import type { Coords } from '../driving/geometry.ts';
import {
  GridIndex,
  Polyline,
  PreparedPolygon,
  bounds,
  boxCorners,
  convexIntersects,
  normalizeAngle,
  pointInPolygon,
  polygonCentroid,
  polygonsIntersect,
  segmentIntersectsPolygon,
  strTreeOrder,
} from '../driving/geometry.ts';
import type { Lane } from '../driving/map.ts';
import { DrivingMap } from '../driving/map.ts';
import { baselineHeadings, polygonDistance } from './pdm-path.ts';
import { correctedRoute } from './route-correction.ts';
import type { Scene } from './scene.ts';

export type Version = 1 | 2;

/** Constants of NAVSIM's `PDMScorerConfig` and nuPlan's collision rules. */
export const PDM = {
  weightsV1: { ep: 5, ttc: 5, comfort: 2, ddc: 0 },
  weightsV2: { ep: 5, ttc: 5, lk: 2, hc: 2, ec: 2 },
  egoStoppedSpeed: 0.05,
  trackStoppedSpeed: 0.05,
  ttcStoppedSpeed: 5e-3,
  ttcFutureIdcs: [0, 3, 6, 9],
  aheadDeg: 30,
  behindDeg: 150,
  progressThreshold: 5,
  ddcHorizonSteps: 10,
  ddcCompliance: 2,
  ddcViolation: 6,
  lkDeviation: 0.5,
  lkSteps: 20,
  dt: 0.1,
  numPoses: 40,
} as const;

export interface FrameObject {
  token: string;
  /** Corners FL, RL, RR, FR (objects) or a lane-connector polygon (red lights). */
  polygon: Coords;
  cx: number;
  cy: number;
  redLight: boolean;
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

export interface UniqueObject {
  type: string;
  heading: number;
  speed: number;
  isStatic: boolean;
}

/** Everything scoring needs that does not depend on the proposals (NAVSIM's metric cache). */
export interface ScoringWorld {
  map: DrivingMap;
  routeLaneIds: Set<string>;
  centerline: Polyline;
  /** The route lanes PDM-Closed's centreline runs along, from its starting lane. */
  centerlineLanes: Lane[];
  /** Observation frames at 0.1 s, index = time index. */
  frames: FrameObject[][];
  unique: Map<string, UniqueObject>;
  vehicle: VehicleParameters;
  /**
   * NAVSIM's `PDMDrivableMap`: the roadblocks and roadblock connectors within 100 m of the ego
   * centre with their lanes and lane connectors, and the intersections and carparks there (never
   * the drivable-area layer). Multiple-lane, oncoming and intersection tests read it.
   */
  areaMap: DrivingMap;
  /** Polygons whose union is drivable for DAC: the area map's roadblocks, intersections and carparks. */
  dacPolygons: PreparedPolygon[];
  dacIndex: GridIndex;
  tracks: AgentTrack[];
  /** Tokens ignored from the start by NC and TTC (PDM-Closed's observation: what the ego overlaps at t = 0). */
  ignoredTokens: ReadonlySet<string>;
}

/** Route lanes: the lanes of the route roadblocks. */
export function routeLanes(map: DrivingMap, route: readonly string[]): Lane[] {
  return map.lanesOfRoadblocks(route);
}

/**
 * PDM-Closed's starting lane (`_get_starting_lane`): among the on-route lanes containing the rear
 * axle (boundary included: the drivable map's `intersects`), the one whose nearest baseline point
 * points most like the ego; otherwise the first route lane strictly containing the ego centre
 * (nuPlan's `contains_point`), else the route lane nearest the ego's footprint.
 */
export function startingLane(
  map: DrivingMap,
  route: readonly string[],
  ego: { x: number; y: number; heading: number },
  v: VehicleParameters = PACIFICA,
): Lane | null {
  const routeLaneList = routeLanes(map, [...new Set(route)]);
  const onRoute = new Set(routeLaneList.map((l) => l.id));
  let best: Lane | null = null,
    bestErr = Infinity;
  // Candidates in the order of NAVSIM's drivable-map query: numpy's argmin keeps the first of equal errors.
  const candidates = map.lanesAt(ego.x, ego.y).filter((id) => onRoute.has(id));
  if (candidates.length > 1) {
    const rank = drivableMapLaneRank(map, egoCenter(ego, v));
    candidates.sort((a, b) => (rank.get(a) ?? Infinity) - (rank.get(b) ?? Infinity));
  }
  for (const id of candidates) {
    const lane = map.lane(id) as Lane;
    const c = lane.centerline.coords;
    const headings = baselineHeadings(c);
    let k = 0,
      kd = Infinity;
    for (let i = 0; i < headings.length; i++) {
      const d = Math.sqrt(((c[2 * i] as number) - ego.x) ** 2 + ((c[2 * i + 1] as number) - ego.y) ** 2);
      if (d < kd) {
        kd = d;
        k = i;
      }
    }
    const err = Math.abs(normalizeAngle((headings[k] as number) - ego.heading));
    if (err < bestErr) {
      bestErr = err;
      best = lane;
    }
  }
  if (best) return best;
  const center = egoCenter(ego, v);
  const footprint = egoFootprint(ego, v);
  let closest = Infinity;
  for (const lane of routeLaneList) {
    if (pointInPolygon(center.x, center.y, lane.polygon, 'outside')) return lane;
    const d = polygonDistance(lane.polygon, footprint);
    if (d < closest) {
      closest = d;
      best = lane;
    }
  }
  return best;
}

/** `_get_discrete_centerline`'s search depth: the target is this many route roadblocks on from the start. */
export const CENTERLINE_SEARCH_DEPTH = 30;

/**
 * The lanes of PDM-Closed's centreline, as `_get_discrete_centerline` finds them with NAVSIM's
 * `Dijkstra` (`utils/graph_search/dijkstra.py`): the target is the route roadblock
 * {@link CENTERLINE_SEARCH_DEPTH} - 1 places on from the starting lane's roadblock (the route's last on
 * shorter routes); the search runs over route lanes only, a lane costs its centreline length and the
 * starting lane 1; the cheapest queued lane is expanded next, the one queued first on ties; the
 * first lane popped in the target roadblock ends the path. When none is reached, the path ends at
 * the cheapest of the deepest lanes expanded. At a fork this takes the shorter branch, not the
 * first-listed successor.
 */
export function centerlineLanes(map: DrivingMap, route: readonly string[], start: Lane, depth = CENTERLINE_SEARCH_DEPTH): Lane[] {
  const blocks = [...new Set(route)].filter((id) => map.roadblocks.has(id));
  const startIdx = Math.max(0, blocks.indexOf(start.roadblockId));
  const window = blocks.slice(startIdx, startIdx + depth);
  const target = window[window.length - 1];
  const candidates = new Set(routeLanes(map, blocks).map((l) => l.id));
  const parent = new Map<string, Lane | null>([[start.id, null]]);
  const queue: { lane: Lane; dist: number; depth: number }[] = [{ lane: start, dist: 1, depth: 1 }];
  const expanded: { lane: Lane; dist: number; depth: number }[] = [];
  const expandedIds = new Set<string>();
  let end: Lane | null = null;
  while (queue.length > 0) {
    let k = 0;
    for (let i = 1; i < queue.length; i++) if ((queue[i] as { dist: number }).dist < (queue[k] as { dist: number }).dist) k = i;
    const cur = queue.splice(k, 1)[0] as { lane: Lane; dist: number; depth: number };
    if (cur.lane.roadblockId === target) {
      end = cur.lane;
      break;
    }
    expanded.push(cur);
    expandedIds.add(cur.lane.id);
    for (const id of cur.lane.outgoing) {
      const next = map.lane(id);
      if (!next || !candidates.has(id)) continue;
      const alt = cur.dist + next.centerline.length;
      const queued = queue.find((q) => q.lane.id === id);
      if (!expandedIds.has(id) && !queued) {
        parent.set(id, cur.lane);
        queue.push({ lane: next, dist: alt, depth: cur.depth + 1 });
      } else if (queued && alt < queued.dist) {
        parent.set(id, cur.lane);
        queued.dist = alt;
        queued.depth = cur.depth + 1;
      }
    }
  }
  if (!end) {
    const deepest = Math.max(...expanded.map((e) => e.depth));
    let best: { lane: Lane; dist: number } | null = null;
    for (const e of expanded) if (e.depth === deepest && (!best || e.dist < best.dist)) best = e;
    end = (best as { lane: Lane }).lane;
  }
  const lanes: Lane[] = [];
  for (let l: Lane | null | undefined = end; l; l = parent.get(l.id)) lanes.push(l);
  return lanes.reverse();
}

/**
 * PDM-Closed's centreline: the centrelines of {@link centerlineLanes} from its starting lane,
 * concatenated. `line` merges the lane-join points (projection is the same either way);
 * PDM-Closed's own paths keep both copies (see pdm-path.ts).
 */
export function routeCenterline(map: DrivingMap, route: readonly string[], ego: { x: number; y: number; heading: number }): { line: Polyline; lanes: Lane[] } {
  let start = startingLane(map, route, ego);
  if (!start) {
    const n = map.nearestLane(ego.x, ego.y, ego.heading, 1e6);
    if (!n) throw new Error('no lane near the ego');
    start = n.lane;
  }
  const lanes = centerlineLanes(map, route, start);
  const pts: number[] = [];
  for (const l of lanes) {
    const c = l.centerline.coords;
    for (let i = 0; i < c.length; i += 2) {
      const x = c[i] as number,
        y = c[i + 1] as number;
      const n = pts.length;
      if (n >= 2 && Math.abs((pts[n - 2] as number) - x) < 1e-9 && Math.abs((pts[n - 1] as number) - y) < 1e-9) continue;
      pts.push(x, y);
    }
  }
  return { line: new Polyline(Float64Array.from(pts)), lanes };
}

/** Red on-route lane connectors at time `t` (piecewise constant from each entry's `t`). */
export function redLightsAt(scene: Scene, t: number): string[] {
  let red: string[] = [];
  for (const e of scene.traffic_lights) if (e.t <= t + 1e-9) red = e.red;
  return red;
}

/** NAVSIM's map radius around the ego centre for the drivable-area map and PDM-Closed's objects. */
export const MAP_RADIUS = 100;

/** The ego's box centre (rear axle moved forward by half the length minus the rear overhang). */
export function egoCenter(ego: { x: number; y: number; heading: number }, v: VehicleParameters = PACIFICA): { x: number; y: number } {
  const toCenter = (v.front + v.rear) / 2 - v.rear;
  return { x: ego.x + toCenter * Math.cos(ego.heading), y: ego.y + toCenter * Math.sin(ego.heading) };
}

/** The ego's box at a rear-axle pose (nuPlan's `car_footprint`), corners FL, RL, RR, FR. */
export function egoFootprint(ego: { x: number; y: number; heading: number }, v: VehicleParameters = PACIFICA): Coords {
  const c = egoCenter(ego, v);
  return boxCorners({ x: c.x, y: c.y, heading: ego.heading, length: v.front + v.rear, width: v.width });
}

/**
 * NAVSIM v2's log-replay traffic (`LogReplayTrafficAgents.simulate_environment`, run by
 * `pdm_score.py` before scoring): every object whose box touches the ego's footprint at t = 0 is
 * removed from every frame. v1 scores the logged frames as they are.
 */
export function withoutStartOverlaps(frames: FrameObject[][], footprint: Coords): { frames: FrameObject[][]; removed: Set<string> } {
  const b = bounds(footprint);
  const removed = new Set((frames[0] ?? []).filter((o) => !o.redLight && hits(footprint, o, b)).map((o) => o.token));
  if (removed.size === 0) return { frames, removed };
  return { frames: frames.map((f) => f.filter((o) => o.redLight || !removed.has(o.token))), removed };
}

/**
 * `PDMDrivableMap.from_simulation`: roadblocks and roadblock connectors touching the square of
 * half-side `radius` around `center` (nuPlan's `get_proximal_map_objects` queries a box, not a
 * circle) with all their lanes, and the intersections and carparks touching it; the drivable-area
 * layer is left out, as NAVSIM leaves it out.
 */
export function proximalAreaMap(map: DrivingMap, center: { x: number; y: number }, radius = MAP_RADIUS): DrivingMap {
  const patch = Float64Array.of(
    center.x - radius,
    center.y - radius,
    center.x + radius,
    center.y - radius,
    center.x + radius,
    center.y + radius,
    center.x - radius,
    center.y + radius,
  );
  const near = (p: Coords): boolean => polygonsIntersect(patch, p);
  const data = map.data;
  const blocks = data.roadblocks.filter((r) => near(map.roadblocks.get(r.id)?.polygon as Coords));
  const blockIds = new Set(blocks.map((b) => b.id));
  return new DrivingMap({
    name: data.name,
    roadblocks: blocks,
    lanes: data.lanes.filter((l) => blockIds.has(l.roadblock_id)),
    intersections: data.intersections.filter((_a, i) => near((map.intersections[i] as { polygon: Coords }).polygon)),
    carparks: data.carparks.filter((_a, i) => near((map.carparks[i] as { polygon: Coords }).polygon)),
    drivable_areas: [],
  });
}

/**
 * The lanes of PDM-Closed's drivable map (`PDMDrivableMap.from_simulation` around the ego centre:
 * roadblocks, then the lanes of each roadblock, then those of each connector, then intersections and
 * carparks), ranked in the order its STR tree reports them.
 */
function drivableMapLaneRank(map: DrivingMap, center: { x: number; y: number }): Map<string, number> {
  const area = proximalAreaMap(map, center);
  const blocks = [...area.roadblocks.values()];
  const lanes = [...blocks.filter((b) => b.kind === 'roadblock'), ...blocks.filter((b) => b.kind === 'roadblock_connector')].flatMap((b) =>
    b.laneIds.map((id) => area.lane(id)).filter((l): l is Lane => l !== undefined),
  );
  const polygons = [
    ...blocks.filter((b) => b.kind === 'roadblock').map((b) => b.polygon),
    ...lanes.map((l) => l.polygon),
    ...area.intersections.map((a) => a.polygon),
    ...area.carparks.map((a) => a.polygon),
  ];
  const firstLane = polygons.length - lanes.length - area.intersections.length - area.carparks.length;
  const rank = new Map<string, number>();
  strTreeOrder(polygons.map((p) => bounds(p))).forEach((item, position) => {
    const lane = lanes[item - firstLane];
    if (lane && item >= firstLane) rank.set(lane.id, position);
  });
  return rank;
}

/** DAC polygons of an area map: roadblocks (not their connectors), intersections, carparks. */
function dacLayers(areaMap: DrivingMap): { dacPolygons: PreparedPolygon[]; dacIndex: GridIndex } {
  const polys = [
    ...[...areaMap.roadblocks.values()].filter((r) => r.kind === 'roadblock').map((r) => r.polygon),
    ...areaMap.intersections.map((a) => a.polygon),
    ...areaMap.carparks.map((a) => a.polygon),
  ];
  return { dacPolygons: polys.map((p) => new PreparedPolygon(p)), dacIndex: new GridIndex(polys.map((p) => bounds(p))) };
}

/** Red-light objects for the on-route lane connectors red at time `t`. */
export function redLightObjects(scene: Scene, map: DrivingMap, routeIds: ReadonlySet<string>, t: number): FrameObject[] {
  const out: FrameObject[] = [];
  for (const id of redLightsAt(scene, t)) {
    const lane = map.lane(id);
    if (!lane || !routeIds.has(id)) continue;
    const [minX, minY, maxX, maxY] = bounds(lane.polygon);
    const c = polygonCentroid(lane.polygon);
    out.push({ token: `red_light_${id}`, polygon: lane.polygon, cx: c.x, cy: c.y, redLight: true, minX, minY, maxX, maxY });
  }
  return out;
}

/**
 * Builds the scoring world for a scene (NAVSIM's metric cache): observation frames from the logged
 * future (v1: 51 frames to 5.0 s, v2: 41 to 4.0 s, less the objects touching the ego at t = 0, see
 * {@link withoutStartOverlaps}), for v2 the red on-route lane connectors of each
 * frame (sampled at 2 Hz as `_interpolate_traffic_light_status` does), route lanes (of the route
 * as PDM-Closed repairs it, see route-correction.ts), PDM-Closed's centreline and the drivable-area map.
 */
export function buildWorld(scene: Scene, version: Version, map: DrivingMap = new DrivingMap(scene.map)): ScoringWorld {
  const tracks = scene.agents.map((a) => makeTrack(a));
  const nFrames = version === 1 ? 51 : 41;
  const route = correctedRoute(map, scene.route_roadblock_ids, scene.ego);
  const routeIds = new Set(routeLanes(map, route).map((l) => l.id));
  // v2's observation takes its red lights from the route as logged (`_load_route_dicts` in metric caching).
  const loggedRouteIds = new Set(routeLanes(map, scene.route_roadblock_ids).map((l) => l.id));
  const unique = new Map<string, UniqueObject>();
  const frames: FrameObject[][] = [];
  for (let f = 0; f < nFrames; f++) {
    const t = f * PDM.dt;
    const objs: FrameObject[] = [];
    for (const tr of tracks) {
      let k = sampleIndex(tr, t);
      if (k < 0 && tr.t.length === 1) k = 0; // a single observation holds for the whole horizon
      if (k < 0) continue;
      const x = tr.s[5 * k] as number,
        y = tr.s[5 * k + 1] as number,
        h = tr.s[5 * k + 2] as number;
      const corners = boxCorners({ x, y, heading: h, length: tr.length, width: tr.width });
      const [minX, minY, maxX, maxY] = bounds(corners);
      objs.push({ token: tr.token, polygon: corners, cx: x, cy: y, redLight: false, minX, minY, maxX, maxY });
      if (!unique.has(tr.token)) {
        const stat = isStaticType(tr.type);
        unique.set(tr.token, { type: tr.type, heading: h, speed: stat ? 0 : Math.hypot(tr.s[5 * k + 3] as number, tr.s[5 * k + 4] as number), isStatic: stat });
      }
    }
    if (version === 2) objs.push(...redLightObjects(scene, map, loggedRouteIds, Math.floor(f / 5) * 0.5));
    frames.push(objs);
  }
  if (version === 2) {
    const filtered = withoutStartOverlaps(frames, egoFootprint(scene.ego));
    frames.splice(0, frames.length, ...filtered.frames);
    for (const token of filtered.removed) unique.delete(token);
  }
  const centerline = routeCenterline(map, route, scene.ego);
  const areaMap = proximalAreaMap(map, egoCenter(scene.ego));
  return {
    map,
    routeLaneIds: routeIds,
    centerline: centerline.line,
    centerlineLanes: centerline.lanes,
    frames,
    unique,
    vehicle: PACIFICA,
    areaMap,
    ...dacLayers(areaMap),
    tracks,
    ignoredTokens: new Set(),
  };
}

/** Per-proposal sub-metrics before aggregation. */
export interface ProposalMetrics {
  nc: number;
  dac: number;
  ddc: number;
  tlc: number;
  ttc: number;
  comfort: number;
  lk: number;
  hc: number;
  progressRaw: number;
  collisionStep: number | null;
  ttcStep: number | null;
  multipleLanesSteps: number[];
  nonDrivableSteps: number[];
  oncomingSteps: number[];
}

export interface ScoredProposal extends ProposalMetrics {
  ep: number;
  multiplicative: number;
  /** v1: PDMS; v2: EPDMS without EC (/14), as NAVSIM's per-row `pdm_score`. */
  pdms: number;
}

export interface ScoreOptions {
  version: Version;
  /** v2 history comfort: human past states at 0.1 s (flat, 11 per state) prepended to each proposal. */
  historyStates?: Float64Array | null;
}

const D2R = Math.PI / 180;

/**
 * nuPlan's `get_agent_relative_angle`, in its order of operations (norm as sqrt(x² + y²), the unit
 * vector before the dot product): where rounding takes the cosine past 1 it is NaN there too, and an
 * agent exactly in line is then neither ahead nor behind, as in nuPlan.
 */
function relativeAngle(ex: number, ey: number, eh: number, ax: number, ay: number): number {
  const vx = ax - ex,
    vy = ay - ey;
  const n = Math.sqrt(vx * vx + vy * vy);
  return Math.acos(Math.cos(eh) * (vx / n) + Math.sin(eh) * (vy / n));
}

function egoGeometry(states: Float64Array, v: VehicleParameters): { corners: Float64Array[]; cx: Float64Array; cy: Float64Array } {
  const n = states.length / STATE_SIZE;
  const toCenter = (v.front + v.rear) / 2 - v.rear;
  const length = v.front + v.rear;
  const corners: Float64Array[] = [];
  const cx = new Float64Array(n),
    cy = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const o = i * STATE_SIZE;
    const h = states[o + S.HEADING] as number;
    const x = (states[o + S.X] as number) + toCenter * Math.cos(h);
    const y = (states[o + S.Y] as number) + toCenter * Math.sin(h);
    cx[i] = x;
    cy[i] = y;
    corners.push(boxCorners({ x, y, heading: h, length, width: v.width }));
  }
  return { corners, cx, cy };
}

function hits(poly: Coords, o: FrameObject, b: [number, number, number, number]): boolean {
  if (b[2] < o.minX || b[0] > o.maxX || b[3] < o.minY || b[1] > o.maxY) return false;
  return o.redLight ? polygonsIntersect(poly, o.polygon) : convexIntersects(poly, o.polygon);
}

/**
 * Scores one proposal's simulated states (41 x 11, flat) against the world. Every point test (corners
 * in lanes and drivable polygons, the centre in route lanes and intersections) counts boundary points
 * as outside, as NAVSIM's `points_in_polygons` (shapely `contains`) and `is_in_layer` (`within`) do:
 * an ego whose corner lies exactly on the road edge is off the drivable area.
 */
export function proposalMetrics(states: Float64Array, world: ScoringWorld, opts: ScoreOptions): ProposalMetrics {
  const n = states.length / STATE_SIZE;
  const map = world.areaMap;
  const { corners, cx, cy } = egoGeometry(states, world.vehicle);
  const multiple = new Uint8Array(n),
    nonDrivable = new Uint8Array(n),
    oncoming = new Uint8Array(n);
  const scratch: number[] = [];
  for (let i = 0; i < n; i++) {
    const c = corners[i] as Float64Array;
    const laneIds: string[] = [];
    const counts: number[] = [];
    let inDrivable = 0;
    for (let k = 0; k < 4; k++) {
      const px = c[2 * k] as number,
        py = c[2 * k + 1] as number;
      for (const id of map.lanesAt(px, py, 'outside')) {
        const j = laneIds.indexOf(id);
        if (j < 0) {
          laneIds.push(id);
          counts.push(1);
        } else counts[j] = (counts[j] as number) + 1;
      }
      let inside = false;
      for (const j of world.dacIndex.queryPoint(px, py, scratch))
        if ((world.dacPolygons[j] as PreparedPolygon).contains(px, py, 'outside')) {
          inside = true;
          break;
        }
      if (inside) inDrivable++;
    }
    multiple[i] = laneIds.length > 1 && !counts.includes(4) ? 1 : 0;
    nonDrivable[i] = inDrivable < 4 ? 1 : 0;
    oncoming[i] = map.lanesAt(cx[i] as number, cy[i] as number, 'outside').some((id) => world.routeLaneIds.has(id)) ? 0 : 1;
  }

  // NC
  let nc = 1;
  let collisionStep: number | null = null;
  const ignored = new Set<string>(world.ignoredTokens);
  for (let i = 0; i < n; i++) {
    const poly = corners[i] as Float64Array;
    const b = bounds(poly);
    const frame = world.frames[i] ?? [];
    for (const o of frame) {
      if (o.redLight || ignored.has(o.token) || !hits(poly, o, b)) continue;
      const u = world.unique.get(o.token) as UniqueObject;
      const so = i * STATE_SIZE;
      const egoSpeed = Math.hypot(states[so + S.VX] as number, states[so + S.VY] as number);
      let atFault: boolean;
      if (egoSpeed <= PDM.egoStoppedSpeed) atFault = false;
      else if (u.isStatic || u.speed <= PDM.trackStoppedSpeed) atFault = true;
      else if (relativeAngle(states[so + S.X] as number, states[so + S.Y] as number, states[so + S.HEADING] as number, o.cx, o.cy) > PDM.behindDeg * D2R)
        atFault = false;
      else if (segmentIntersectsPolygon(poly[0] as number, poly[1] as number, poly[6] as number, poly[7] as number, o.polygon)) atFault = true;
      else atFault = multiple[i] === 1 || nonDrivable[i] === 1;
      if (atFault) {
        nc = Math.min(nc, u.isStatic ? 0.5 : 0);
        collisionStep = collisionStep === null ? i : Math.min(collisionStep, i);
      } else ignored.add(o.token);
    }
  }

  // DAC
  const dac = nonDrivable.some((v) => v === 1) ? 0 : 1;

  // TLC (v2): ego polygon touching a red on-route lane connector.
  let tlc = 1;
  if (opts.version === 2) {
    for (let i = 0; i < n && tlc === 1; i++) {
      const poly = corners[i] as Float64Array;
      const b = bounds(poly);
      for (const o of world.frames[i] ?? [])
        if (o.redLight && hits(poly, o, b)) {
          tlc = 0;
          break;
        }
    }
  }

  // DDC: v1 counts intersections, v2 skips them.
  const oncomingProgress = new Float64Array(n);
  for (let i = 1; i < n; i++) {
    if (!oncoming[i]) continue;
    if (opts.version === 2 && map.inIntersection(cx[i] as number, cy[i] as number, 'outside')) continue;
    oncomingProgress[i] = Math.hypot((cx[i] as number) - (cx[i - 1] as number), (cy[i] as number) - (cy[i - 1] as number));
  }
  let maxOncoming = 0;
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let k = Math.max(0, i - PDM.ddcHorizonSteps); k <= i; k++) s += oncomingProgress[k] as number;
    maxOncoming = Math.max(maxOncoming, s);
  }
  const ddc = maxOncoming < PDM.ddcCompliance ? 1 : maxOncoming < PDM.ddcViolation ? 0.5 : 0;

  // Progress
  const p0 = world.centerline.project(cx[0] as number, cy[0] as number).s;
  const p1 = world.centerline.project(cx[n - 1] as number, cy[n - 1] as number).s;
  const progressRaw = Math.max(0, p1 - p0);

  // TTC
  let ttc = 1;
  let ttcStep: number | null = null;
  const ttcIgnored = new Set<string>(world.ignoredTokens);
  const lastStep = opts.version === 1 ? n - 1 : PDM.numPoses - Math.max(...PDM.ttcFutureIdcs);
  const shifted = new Float64Array(8);
  for (let i = 0; i <= lastStep && i < n; i++) {
    const so = i * STATE_SIZE;
    const speed = Math.hypot(states[so + S.VX] as number, states[so + S.VY] as number);
    const h = states[so + S.HEADING] as number;
    const ex = states[so + S.X] as number,
      ey = states[so + S.Y] as number;
    for (const fi of PDM.ttcFutureIdcs) {
      const frame = world.frames[i + fi];
      if (!frame) continue;
      const dt = fi * PDM.dt;
      const dx = Math.cos(h) * speed * dt,
        dy = Math.sin(h) * speed * dt;
      const c = corners[i] as Float64Array;
      for (let k = 0; k < 8; k += 2) {
        shifted[k] = (c[k] as number) + dx;
        shifted[k + 1] = (c[k + 1] as number) + dy;
      }
      const b = bounds(shifted);
      for (const o of frame) {
        if (o.redLight || ttcIgnored.has(o.token) || speed < PDM.ttcStoppedSpeed || !hits(shifted, o, b)) continue;
        const angle = relativeAngle(ex, ey, h, o.cx, o.cy);
        const ahead = angle < PDM.aheadDeg * D2R;
        const behind = angle > PDM.behindDeg * D2R;
        const risky = multiple[i] === 1 || nonDrivable[i] === 1 || map.inIntersection(ex, ey, 'outside');
        if (ahead || (risky && !behind)) {
          ttc = 0;
          ttcStep = ttcStep === null ? i : Math.min(ttcStep, i);
        } else ttcIgnored.add(o.token);
      }
    }
  }

  // Comfort (v1) on the simulated states; history comfort (v2) with the human's past prepended.
  const comfort = comfortChecks(states, n, PDM.dt, opts.version).all ? 1 : 0;
  let hc = 1;
  if (opts.version === 2 && opts.historyStates && opts.historyStates.length > 0) {
    const padded = new Float64Array(opts.historyStates.length + states.length);
    padded.set(opts.historyStates, 0);
    padded.set(states, opts.historyStates.length);
    hc = comfortChecks(padded, padded.length / STATE_SIZE, PDM.dt, 2).all ? 1 : 0;
  }

  // LK (v2): > 0.5 m from the centreline for 20 consecutive non-intersection steps.
  let lk = 1;
  let run = 0;
  for (let i = 0; i < n && opts.version === 2; i++) {
    if (map.inIntersection(cx[i] as number, cy[i] as number, 'outside')) continue;
    const d = Math.sqrt(world.centerline.project(cx[i] as number, cy[i] as number).dist2);
    run = d > PDM.lkDeviation ? run + 1 : 0;
    if (run >= PDM.lkSteps) {
      lk = 0;
      break;
    }
  }

  const steps = (m: Uint8Array) => Array.from(m).flatMap((v, i) => (v ? [i] : []));
  return {
    nc,
    dac,
    ddc,
    tlc,
    ttc,
    comfort,
    lk,
    hc,
    progressRaw,
    collisionStep,
    ttcStep,
    multipleLanesSteps: steps(multiple),
    nonDrivableSteps: steps(nonDrivable),
    oncomingSteps: steps(oncoming),
  };
}

/** Aggregates proposals as `_aggregate_scores` (v1) / `_aggregate_pdm_scores` (v2). */
export function aggregate(metrics: ProposalMetrics[], version: Version): ScoredProposal[] {
  const mult = metrics.map((m) => (version === 1 ? m.nc * m.dac : m.nc * m.dac * m.ddc * m.tlc));
  const masked = metrics.map((m, i) => m.progressRaw * (mult[i] as number));
  const norm = Math.max(...masked);
  return metrics.map((m, i) => {
    const mu = mult[i] as number;
    let ep: number;
    if (version === 1) ep = norm > PDM.progressThreshold ? (masked[i] as number) / norm : mu === 0 ? 0 : 1;
    else ep = norm > PDM.progressThreshold ? Math.min(1, Math.max(0, m.progressRaw / norm)) : 1;
    const w1 = PDM.weightsV1,
      w2 = PDM.weightsV2;
    const weighted =
      version === 1
        ? (w1.ep * ep + w1.ttc * m.ttc + w1.comfort * m.comfort + w1.ddc * m.ddc) / (w1.ep + w1.ttc + w1.comfort + w1.ddc)
        : (w2.ep * ep + w2.ttc * m.ttc + w2.lk * m.lk + w2.hc * m.hc) / (w2.ep + w2.ttc + w2.lk + w2.hc);
    return { ...m, ep, multiplicative: mu, pdms: mu * weighted };
  });
}

/** Scores a batch of simulated proposals (each flat 41 x 11) together. */
export function scoreProposals(states: Float64Array[], world: ScoringWorld, opts: ScoreOptions): ScoredProposal[] {
  return aggregate(
    states.map((s) => proposalMetrics(s, world, opts)),
    opts.version,
  );
}

/** The v2 score from sub-metrics, with EC: NC·DAC·DDC·TLC·(5EP + 5TTC + 2LK + 2HC + 2EC)/16. */
export function epdms(m: { nc: number; dac: number; ddc: number; tlc: number; ep: number; ttc: number; lk: number; hc: number }, ec: number): number {
  const w = PDM.weightsV2;
  return m.nc * m.dac * m.ddc * m.tlc * ((w.ep * m.ep + w.ttc * m.ttc + w.lk * m.lk + w.hc * m.hc + w.ec * ec) / (w.ep + w.ttc + w.lk + w.hc + w.ec));
}

/** v2 PDMS without EC (/14) from sub-metrics. */
export function pdmsV2(m: { nc: number; dac: number; ddc: number; tlc: number; ep: number; ttc: number; lk: number; hc: number }): number {
  const w = PDM.weightsV2;
  return m.nc * m.dac * m.ddc * m.tlc * ((w.ep * m.ep + w.ttc * m.ttc + w.lk * m.lk + w.hc * m.hc) / (w.ep + w.ttc + w.lk + w.hc));
}

export const FILTERED_KEYS = ['nc', 'dac', 'ddc', 'tlc', 'ep', 'ttc', 'lk', 'hc'] as const;

/** v2 human penalty filter: every sub-metric the human scores 0 on becomes 1 for the agent. */
export function humanFilter<T extends Record<(typeof FILTERED_KEYS)[number], number>>(agent: T, human: Record<(typeof FILTERED_KEYS)[number], number>): T {
  const out = { ...agent };
  for (const k of FILTERED_KEYS) if (human[k] === 0) (out as Record<string, number>)[k] = 1;
  return out;
}

/**
 * v2 two-stage weighting: each stage-2 follow-up scene gets w = exp(-d² / (2 · 0.1)), d the distance
 * from the agent's stage-1 endpoint to the follow-up's start; weights are normalised, uniform when
 * they all vanish. Group score = stage-1 score × Σ w_i · stage-2 score_i.
 */
export function twoStageWeights(endpoint: { x: number; y: number }, starts: readonly { x: number; y: number }[], sigma2 = 0.1): number[] {
  const w = starts.map((s) => Math.exp(-((s.x - endpoint.x) ** 2 + (s.y - endpoint.y) ** 2) / (2 * sigma2)));
  const sum = w.reduce((a, b) => a + b, 0);
  if (!(sum > 1e-12)) return starts.map(() => 1 / starts.length);
  return w.map((v) => v / sum);
}

/** Stage-1 score × weighted mean of stage-2 scores. */
export function twoStageScore(stage1: number, weights: readonly number[], stage2: readonly number[]): number {
  return stage1 * weights.reduce((a, w, i) => a + w * (stage2[i] as number), 0);
}
