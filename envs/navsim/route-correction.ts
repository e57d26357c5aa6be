/**
 * NAVSIM's route repair (`utils/route_utils.py::route_roadblock_correction`, run once by PDM-Closed
 * before it plans): when the ego starts on a roadblock off the route, the roadblocks leading from it
 * to the route are prepended (a backward breadth-first search from the route's first roadblock, else
 * a forward one to any of its first three); when two consecutive route roadblocks are not linked,
 * the roadblocks between them are inserted (a forward search, 30 deep). The repaired route gives
 * PDM-Closed's centreline and the on-route lanes the scorer tests; NAVSIM v2's red lights use the
 * route as logged. Last, a route that comes back through a junction is cut before the first roadblock
 * connector that overlaps an earlier one on the route by more than 1 m² (`remove_route_loops`).
 *
 * @example
 * const route = correctedRoute(map, scene.route_roadblock_ids, scene.ego);
 */
import { normalizeAngle, pointInPolygon, polygonIntersectionArea, polygonsIntersect } from '../driving/geometry.ts';
import type { DrivingMap, Roadblock } from '../driving/map.ts';
import { baselineHeadings, polygonDistance } from './pdm-path.ts';

/** Constants of `route_roadblock_correction` and `get_current_roadblock_candidates`. */
export const ROUTE_CORRECTION = {
  searchDepthBackward: 15,
  searchDepthForward: 30,
  headingErrorThreshold: Math.PI / 4,
  displacementErrorThreshold: 3,
  /** Half-side of the square `get_proximal_map_objects` searches around the rear axle. */
  candidateRadius: 1,
  /** Overlap (m²) with an earlier route connector at which `remove_route_loops` cuts the route. */
  loopOverlapArea: 1,
} as const;

/**
 * NAVSIM's `BreadthFirstSearchRoadBlock.search`: layer by layer, without a visited set, a node's
 * parent being the last node of the layer above that reached it. Returns the path in driving order
 * (forward: start first; backward: the target first, the start last), or null when no target lies
 * within `maxDepth` layers.
 */
export function roadblockSearch(map: DrivingMap, startId: string, targets: readonly string[], maxDepth: number, forward: boolean): string[] | null {
  const start = map.roadblocks.get(startId);
  if (!start) return null;
  const queue: (Roadblock | null)[] = [start, null];
  const parent = new Map<string, Roadblock | null>([[`${start.id}_1`, null]]);
  let depth = 1;
  let head = 0;
  while (head < queue.length) {
    const cur = queue[head++] as Roadblock | null;
    if (depth > maxDepth) break;
    if (cur === null) {
      depth += 1;
      queue.push(null);
      if (queue[head] === null) break;
      continue;
    }
    if (targets.includes(cur.id)) {
      const path = [cur.id];
      let node: Roadblock | null | undefined = cur;
      for (let d = depth; (node = parent.get(`${node.id}_${d}`)); d--) path.push(node.id);
      return forward ? path.reverse() : path;
    }
    for (const id of forward ? cur.outgoing : cur.incoming) {
      const next = map.roadblocks.get(id);
      if (!next) continue;
      queue.push(next);
      parent.set(`${next.id}_${depth + 1}`, cur);
    }
  }
  return null;
}

/**
 * `get_current_roadblock_candidates`: the roadblocks and connectors touching a 2 m square around the
 * rear axle (else the nearest of each layer), each judged by its lanes' nearest baseline points.
 * Returns the best on-route candidate (least displacement) and all on-route ones when a lane points
 * within 45 degrees and lies within 3 m; else the same among the others; else the candidate with
 * the nearest lane.
 */
export function currentRoadblockCandidates(
  map: DrivingMap,
  routeIds: readonly string[],
  ego: { x: number; y: number; heading: number },
): { best: Roadblock; candidates: Roadblock[] } | null {
  const r = ROUTE_CORRECTION.candidateRadius;
  const patch = Float64Array.of(ego.x - r, ego.y - r, ego.x + r, ego.y - r, ego.x + r, ego.y + r, ego.x - r, ego.y + r);
  const all = [...map.roadblocks.values()];
  const layers = [all.filter((b) => b.kind === 'roadblock'), all.filter((b) => b.kind === 'roadblock_connector')];
  let blocks = layers.flatMap((layer) => layer.filter((b) => polygonsIntersect(b.polygon, patch)));
  if (blocks.length === 0) {
    const point = Float64Array.of(ego.x, ego.y);
    blocks = layers.flatMap((layer) => {
      let best: Roadblock | null = null,
        bestD = Infinity;
      for (const b of layer) {
        const d = pointInPolygon(ego.x, ego.y, b.polygon) ? 0 : polygonDistance(b.polygon, point);
        if (d < bestD) [best, bestD] = [b, d];
      }
      return best ? [best] : [];
    });
  }
  if (blocks.length === 0) return null;
  const onRoute: [Roadblock, number][] = [],
    offRoute: [Roadblock, number][] = [];
  const nearest: number[] = [];
  for (const block of blocks) {
    let blockDisplacement = Infinity;
    for (const laneId of block.laneIds) {
      const c = map.lane(laneId)?.centerline.coords;
      if (!c) continue;
      const headings = baselineHeadings(c);
      let k = 0,
        displacement = Infinity;
      for (let i = 0; i < c.length / 2; i++) {
        const d = Math.sqrt(((c[2 * i] as number) - ego.x) ** 2 + ((c[2 * i + 1] as number) - ego.y) ** 2);
        if (d < displacement) [k, displacement] = [i, d];
      }
      const headingError = Math.abs(normalizeAngle((headings[k] as number) - ego.heading));
      if (displacement < blockDisplacement) blockDisplacement = displacement;
      if (headingError < ROUTE_CORRECTION.headingErrorThreshold && displacement < ROUTE_CORRECTION.displacementErrorThreshold) {
        (routeIds.includes(block.id) ? onRoute : offRoute).push([block, displacement]);
      }
    }
    nearest.push(blockDisplacement);
  }
  const argmin = (list: [Roadblock, number][]): Roadblock => list.reduce((a, b) => (b[1] < a[1] ? b : a))[0];
  if (onRoute.length > 0) return { best: argmin(onRoute), candidates: onRoute.map((e) => e[0]) };
  if (offRoute.length > 0) return { best: argmin(offRoute), candidates: offRoute.map((e) => e[0]) };
  return { best: argmin(blocks.map((b, i) => [b, nearest[i] as number])), candidates: blocks };
}

/** The route as NAVSIM's PDM-Closed repairs it from the ego's rear-axle pose (see the module comment). */
export function correctedRoute(map: DrivingMap, route: readonly string[], ego: { x: number; y: number; heading: number }): string[] {
  let ids = [...new Set(route)].filter((id) => map.roadblocks.has(id));
  if (ids.length === 0) return ids;
  const current = currentRoadblockCandidates(map, ids, ego);
  if (current && !ids.includes(current.best.id)) {
    const candidateIds = current.candidates.map((b) => b.id);
    const back = roadblockSearch(map, ids[0] as string, candidateIds, ROUTE_CORRECTION.searchDepthBackward, false);
    if (back) ids = [...back.slice(0, -1), ...ids];
    else {
      const ahead = roadblockSearch(map, current.best.id, ids.slice(0, 3), ROUTE_CORRECTION.searchDepthForward, true);
      if (ahead) ids = [...ahead, ...ids.slice(ids.indexOf(ahead[ahead.length - 1] as string) + 1)];
    }
  }
  const out: string[] = [];
  ids.forEach((id, i) => {
    out.push(id);
    const next = ids[i + 1];
    if (next === undefined || map.roadblocks.get(next)?.incoming.includes(id)) return;
    const link = roadblockSearch(map, id, [next], ROUTE_CORRECTION.searchDepthForward, true);
    if (link && link.length >= 3) out.push(...link.slice(1, -1));
  });
  return withoutLoops(map, out);
}

/**
 * `remove_route_loops`: the route up to (not including) the first roadblock connector that overlaps
 * an earlier connector of the route by more than `loopOverlapArea`; loops only close in junctions,
 * so plain roadblocks are never compared.
 */
export function withoutLoops(map: DrivingMap, route: readonly string[]): string[] {
  const seen: Roadblock[] = [];
  for (let i = 0; i < route.length; i++) {
    const block = map.roadblocks.get(route[i] as string);
    if (block?.kind !== 'roadblock_connector') continue;
    if (seen.some((earlier) => polygonIntersectionArea(earlier.polygon, block.polygon) > ROUTE_CORRECTION.loopOverlapArea)) return route.slice(0, i);
    seen.push(block);
  }
  return [...route];
}
