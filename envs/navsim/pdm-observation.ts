/**
 * PDM-Closed's own observation (`PDMObservation.update` with `PDMObjectManager`): the objects seen
 * at t = 0 within 100 m of the ego centre (nearest 50 vehicles, 25 pedestrians, 10 bicycles and
 * 50 static objects), moving ones forecast at constant velocity along their heading (reversed when
 * they move backwards) and sampled every second step, plus the red on-route lane connectors of
 * t = 0 in every frame, each frame in its STR tree's order. Objects the ego already overlaps at t = 0 are ignored by the planner's
 * leading-agent search and by its scorer. PDM-Closed never sees the logged future.
 *
 * @example
 * const forecast = forecastWorld(scene, buildWorld(scene, 1));
 * forecast.frames[10]; // the objects at 1.0 s as PDM-Closed predicts them
 */
import { isStaticType, makeTrack, sampleIndex } from '../driving/agents.ts';
import { bounds, boxCorners, convexIntersects, normalizeAngle, pointInPolygon, strTreeOrder } from '../driving/geometry.ts';
import { numpyArgsort } from './argsort.ts';
import type { FrameObject, ScoringWorld, UniqueObject } from './pdm.ts';
import { egoCenter, egoFootprint, MAP_RADIUS, redLightObjects } from './pdm.ts';
import type { Scene } from './scene.ts';

/** `MAX_DYNAMIC_OBJECTS` and `MAX_STATIC_OBJECTS` of NAVSIM's object manager. */
export const MAX_OBJECTS = { vehicle: 50, pedestrian: 25, bicycle: 10, static: 50 } as const;

/** Frames the forecast covers: PDM-Closed unrolls 50 steps and scores TTC up to 0.9 s past 4.0 s. */
const FORECAST_FRAMES = 52;
const SAMPLE_RESOLUTION = 2;
const DT = 0.1;

interface Seen {
  token: string;
  type: string;
  x: number;
  y: number;
  heading: number;
  length: number;
  width: number;
  dx: number;
  dy: number;
  speed: number;
  isStatic: boolean;
  /** To the ego centre, as the object manager sorts: sqrt(dx² + dy²). */
  distance: number;
}

/**
 * The constant-velocity world PDM-Closed plans and scores its proposals in. `logged` supplies the
 * map, route, centreline and drivable-area layers (they are the same for both).
 */
export function forecastWorld(scene: Scene, logged: ScoringWorld): ScoringWorld {
  const center = egoCenter(scene.ego, logged.vehicle);
  const seen: Seen[] = [];
  for (const a of scene.agents) {
    const tr = makeTrack(a);
    const k = sampleIndex(tr, 0);
    if (k < 0 || Math.abs(tr.t[k] as number) > 1e-6) continue;
    const x = tr.s[5 * k] as number,
      y = tr.s[5 * k + 1] as number,
      heading = tr.s[5 * k + 2] as number;
    if (Math.hypot(x - center.x, y - center.y) > MAP_RADIUS) continue;
    const distance = Math.sqrt((x - center.x) ** 2 + (y - center.y) ** 2);
    const isStatic = isStaticType(tr.type);
    const vx = tr.s[5 * k + 3] as number,
      vy = tr.s[5 * k + 4] as number;
    const speed = isStatic ? 0 : Math.hypot(vx, vy);
    // Along the box heading, flipped when the velocity points backwards.
    const forward = Math.abs(normalizeAngle(heading - Math.atan2(vy, vx))) < Math.PI / 2;
    const h = forward ? heading : normalizeAngle(heading + Math.PI);
    seen.push({
      token: tr.token,
      type: tr.type,
      x,
      y,
      heading,
      length: tr.length,
      width: tr.width,
      dx: isStatic ? 0 : Math.cos(h) * speed,
      dy: isStatic ? 0 : Math.sin(h) * speed,
      speed,
      isStatic,
      distance,
    });
  }
  // numpy's unstable argsort decides which of equally distant objects make the cut.
  const nearest = (list: Seen[], max: number): Seen[] =>
    numpyArgsort(list.map((o) => o.distance))
      .slice(0, max)
      .map((i) => list[i] as Seen);
  const ordered = [
    ...nearest(
      seen.filter((o) => o.isStatic),
      MAX_OBJECTS.static,
    ),
    ...nearest(
      seen.filter((o) => o.type === 'vehicle'),
      MAX_OBJECTS.vehicle,
    ),
    ...nearest(
      seen.filter((o) => o.type === 'pedestrian'),
      MAX_OBJECTS.pedestrian,
    ),
    ...nearest(
      seen.filter((o) => o.type === 'bicycle'),
      MAX_OBJECTS.bicycle,
    ),
  ];
  const unique = new Map<string, UniqueObject>();
  for (const o of ordered) unique.set(o.token, { type: o.type, heading: o.heading, speed: o.speed, isStatic: o.isStatic });
  const redLights = redLightObjects(scene, logged.map, logged.routeLaneIds, 0);

  const samples: FrameObject[][] = [];
  for (let sample = 0; sample < FORECAST_FRAMES; sample += SAMPLE_RESOLUTION) {
    const t = sample * DT;
    const objs: FrameObject[] = ordered.map((o) => {
      const x = o.x + t * o.dx,
        y = o.y + t * o.dy;
      const polygon = boxCorners({ x, y, heading: o.heading, length: o.length, width: o.width });
      const [minX, minY, maxX, maxY] = bounds(polygon);
      return { token: o.token, polygon, cx: x, cy: y, redLight: false, minX, minY, maxX, maxY };
    });
    // In the order the sample's occupancy map (an STR tree) reports them: the leading-agent search
    // takes the first of equally near objects in that order.
    const all = [...objs, ...redLights];
    samples.push(strTreeOrder(all.map((o) => [o.minX, o.minY, o.maxX, o.maxY] as const)).map((i) => all[i] as FrameObject));
  }
  const frames = Array.from({ length: FORECAST_FRAMES }, (_v, i) => samples[Math.floor(i / SAMPLE_RESOLUTION)] as FrameObject[]);

  // What the ego overlaps at t = 0; a red light only when the ego lies wholly inside its connector.
  const footprint = egoFootprint(scene.ego, logged.vehicle);
  const ignored = new Set<string>();
  for (const o of samples[0] ?? []) {
    if (o.redLight) {
      let within = true;
      for (let k = 0; k < 8 && within; k += 2) within = pointInPolygon(footprint[k] as number, footprint[k + 1] as number, o.polygon);
      if (within) ignored.add(o.token);
    } else if (convexIntersects(footprint, o.polygon)) ignored.add(o.token);
  }
  return { ...logged, frames, unique, ignoredTokens: ignored };
}
