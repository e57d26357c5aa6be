/**
 * Navigation commands as Bench2Drive gives them: CARLA's `RoadOption` with its integer codes
 * (VOID −1, LEFT 1, RIGHT 2, STRAIGHT 3, LANEFOLLOW 4, CHANGELANELEFT 5, CHANGELANERIGHT 6), the
 * leaderboard's global-plan downsampling (`route_manipulation.py::downsample_route`), and the
 * `RoutePlanner` that Bench2Drive's agents run on that plan to pick the target point and command.
 *
 * @example
 * const ids = downsampleRoute(route, 50); // indices kept in the global plan
 */

export const RoadOption = {
  VOID: -1,
  LEFT: 1,
  RIGHT: 2,
  STRAIGHT: 3,
  LANEFOLLOW: 4,
  CHANGELANELEFT: 5,
  CHANGELANERIGHT: 6,
} as const;
export type RoadOptionCode = (typeof RoadOption)[keyof typeof RoadOption];
export const ROAD_OPTION_NAMES: Readonly<Record<number, string>> = {
  [-1]: 'VOID',
  1: 'LEFT',
  2: 'RIGHT',
  3: 'STRAIGHT',
  4: 'LANEFOLLOW',
  5: 'CHANGELANELEFT',
  6: 'CHANGELANERIGHT',
};

/** One route point: world position and the option of the edge it belongs to. */
export interface RoutePoint {
  x: number;
  y: number;
  option: RoadOptionCode;
}

/** CARLA's global route planner calls a junction edge a turn above this heading change. */
export const TURN_THRESHOLD_RAD = (35 * Math.PI) / 180;

/**
 * The option of a junction connector from the heading change across it (positive = left, CCW):
 * LEFT above +35°, RIGHT below −35°, STRAIGHT otherwise (the global route planner's threshold).
 */
export function junctionOption(headingChange: number): RoadOptionCode {
  const d = Math.atan2(Math.sin(headingChange), Math.cos(headingChange));
  if (d > TURN_THRESHOLD_RAD) return RoadOption.LEFT;
  if (d < -TURN_THRESHOLD_RAD) return RoadOption.RIGHT;
  return RoadOption.STRAIGHT;
}

const isLaneChange = (o: number | null): boolean => o === RoadOption.CHANGELANELEFT || o === RoadOption.CHANGELANERIGHT;

/**
 * `downsample_route(route, sample_factor)` from the leaderboard, step for step: keep every
 * lane-change point, every point where the option changes (unless the previous one was a lane
 * change), a point once more than `sampleFactor` metres were accumulated since the last kept one,
 * and the last point. Distance is not accumulated on a step that keeps a point (as in the original).
 */
export function downsampleRoute(route: readonly RoutePoint[], sampleFactor = 50): number[] {
  const ids: number[] = [];
  let prev: number | null = null;
  let dist = 0;
  for (let i = 0; i < route.length; i++) {
    const p = route[i]!;
    const cur = p.option;
    if (isLaneChange(cur)) {
      ids.push(i);
      dist = 0;
    } else if (prev !== cur && !isLaneChange(prev)) {
      ids.push(i);
      dist = 0;
    } else if (dist > sampleFactor) {
      ids.push(i);
      dist = 0;
    } else if (i === route.length - 1) {
      ids.push(i);
      dist = 0;
    } else {
      const q = route[i - 1]!;
      dist += Math.hypot(p.x - q.x, p.y - q.y);
    }
    prev = cur;
  }
  return ids;
}

/**
 * The `RoutePlanner(min_distance, max_distance)` of Bench2Drive's agents (UniAD/VAD/TCP use 4 m and
 * 50 m): each tick it pops plan points up to the farthest one within `minDistance` of the ego,
 * looking no further than `maxDistance` along the plan, and always keeps two points. `route[1]` is
 * the target point and its option the command; `route[2]` (or the last) gives the far command.
 */
export class RoutePlanner {
  private route: RoutePoint[] = [];
  constructor(
    readonly minDistance = 4.0,
    readonly maxDistance = 50.0,
  ) {}

  setRoute(plan: readonly RoutePoint[]): void {
    this.route = plan.slice();
  }

  get points(): readonly RoutePoint[] {
    return this.route;
  }

  /** Pops passed points for an ego at (x, y); returns the remaining plan. */
  runStep(x: number, y: number): readonly RoutePoint[] {
    if (this.route.length <= 2) return this.route;
    let toPop = 0;
    let farthest = -Infinity;
    let cumulative = 0;
    for (let i = 1; i < this.route.length; i++) {
      if (cumulative > this.maxDistance) break;
      const a = this.route[i]!;
      const b = this.route[i - 1]!;
      cumulative += Math.hypot(a.x - b.x, a.y - b.y);
      const d = Math.hypot(a.x - x, a.y - y);
      if (d <= this.minDistance && d > farthest) {
        farthest = d;
        toPop = i;
      }
    }
    for (let k = 0; k < toPop && this.route.length > 2; k++) this.route.shift();
    return this.route;
  }

  /** [target point, near command, far command] after `runStep`. */
  current(): { target: RoutePoint; near: RoadOptionCode; far: RoadOptionCode } {
    const r = this.route;
    const target = r[Math.min(1, r.length - 1)] ?? { x: 0, y: 0, option: RoadOption.VOID };
    const far = r[Math.min(2, r.length - 1)] ?? target;
    return { target, near: target.option, far: far.option };
  }

  snapshot(): RoutePoint[] {
    return this.route.map((p) => ({ ...p }));
  }
}
