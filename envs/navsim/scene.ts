/**
 * gymwire's NAVSIM scene format (docs/navsim-scenes.md): one JSON document per scene holding what an
 * OpenScene frame holds: ego pose and dynamics with history, annotated boxes with velocities and
 * track ids on a 0.1 s grid, traffic-light states, route roadblocks, driving command, camera
 * parameters (and optional image paths), the logged human future, and the map around the scene.
 * It is a superset of the reference-vector format (`navsim-ref-scene/1`). `parseScene` validates
 * with zod and reports the first problems as `path: message`, so a converter author can act on it.
 *
 * @example
 * const scene = parseScene(JSON.parse(text), 'scenes/follow_safe.json');
 */
import { z } from 'zod';

import { AGENT_TYPES } from '../driving/agents.ts';
import type { MapData } from '../driving/map.ts';
import { DrivingMap } from '../driving/map.ts';
import { MAP_RADIUS, egoCenter, proximalAreaMap } from './pdm.ts';

const finite = z.number().finite();
const point = z.tuple([finite, finite]);
const points = z.array(point).min(2);
const polygon = z.array(point).min(3);
const id = z.string().min(1);

const RoadblockSchema = z.object({ id, kind: z.enum(['roadblock', 'roadblock_connector']), polygon, incoming: z.array(id), outgoing: z.array(id) });
const LaneSchema = z.object({
  id,
  roadblock_id: id,
  polygon,
  centerline: points,
  speed_limit_mps: finite.positive().nullable(),
  incoming: z.array(id),
  outgoing: z.array(id),
  left_boundary: points.optional(),
  right_boundary: points.optional(),
  left_neighbour: id.nullable().optional(),
  right_neighbour: id.nullable().optional(),
});
const AreaSchema = z.object({ id, polygon });
export const MapSchema = z.object({
  name: z.string(),
  roadblocks: z.array(RoadblockSchema).min(1),
  lanes: z.array(LaneSchema).min(1),
  intersections: z.array(AreaSchema).default([]),
  carparks: z.array(AreaSchema).default([]),
  drivable_areas: z.array(AreaSchema).default([]),
  crosswalks: z.array(AreaSchema).optional(),
  stop_signs: z.array(z.object({ id, polygon, lane_ids: z.array(id) })).optional(),
});

const EgoSchema = z.object({
  x: finite,
  y: finite,
  heading: finite,
  vx: finite,
  vy: finite,
  ax: finite,
  ay: finite,
  steering_angle: finite.optional(),
  yaw_rate: finite.optional(),
});
const TrajectorySchema = z.object({ interval_length: finite.positive(), poses: z.array(z.tuple([finite, finite, finite])).min(1) });
const CameraSchema = z.object({
  name: z.string(),
  x: finite,
  y: finite,
  z: finite,
  yaw: finite,
  pitch: finite.default(0),
  fov_deg: finite.positive(),
  image_path: z.string().nullable().optional(),
  intrinsics: z.array(finite).length(9).optional(),
  distortion: z.array(finite).optional(),
});

export const SceneSchema = z.object({
  format: z.string().optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  timestamp_us: z.number().int().nonnegative(),
  scene_type: z.enum(['original', 'synthetic']).default('original'),
  map: MapSchema,
  route_roadblock_ids: z.array(id).min(1),
  traffic_lights: z.array(z.object({ t: finite, red: z.array(id), green: z.array(id) })).default([]),
  ego: EgoSchema,
  ego_history: z.array(EgoSchema.extend({ t: finite.negative() })).optional(),
  agents: z.array(
    z.object({
      token: id,
      type: z.enum(AGENT_TYPES),
      length: finite.positive(),
      width: finite.positive(),
      height: finite.positive(),
      states: z.array(z.tuple([finite, finite, finite, finite, finite, finite])).min(1),
    }),
  ),
  agent_trajectory: TrajectorySchema.optional(),
  human_trajectory: TrajectorySchema.optional(),
  /** One-hot (left, straight, right, unknown); computed from the route when absent. */
  driving_command: z.tuple([finite, finite, finite, finite]).optional(),
  cameras: z.array(CameraSchema).optional(),
  lidar_path: z.string().nullable().optional(),
  /** Stage-2 follow-up scenes (v2 two-stage), by name, with their start pose. */
  follow_ups: z.array(z.object({ name: z.string(), x: finite, y: finite, heading: finite })).optional(),
});

export type Scene = z.infer<typeof SceneSchema>;

/** Thrown when a scene document does not match the format. */
export class SceneFormatError extends Error {
  override readonly name = 'SceneFormatError';
}

/**
 * Validates and normalises a scene document. Errors name the source, the JSON path and the field,
 * e.g. `scenes/x.json: agents[3].states[0]: expected a tuple of 6 numbers`. Cross-references
 * (lane -> roadblock, route -> roadblocks) are checked too.
 */
export function parseScene(doc: unknown, source = '<scene>'): Scene {
  const r = SceneSchema.safeParse(doc);
  if (!r.success) {
    const lines = r.error.issues.slice(0, 5).map((i) => `${source}: ${formatPath(i.path)}: ${i.message}`);
    throw new SceneFormatError(lines.join('\n'));
  }
  const s = r.data;
  const rb = new Set(s.map.roadblocks.map((b) => b.id));
  const problems: string[] = [];
  s.map.lanes.forEach((l, i) => {
    if (!rb.has(l.roadblock_id)) problems.push(`${source}: map.lanes[${i}].roadblock_id: unknown roadblock '${l.roadblock_id}'`);
  });
  s.route_roadblock_ids.forEach((r2, i) => {
    if (!rb.has(r2)) problems.push(`${source}: route_roadblock_ids[${i}]: unknown roadblock '${r2}'`);
  });
  s.agents.forEach((a, i) => {
    for (let k = 1; k < a.states.length; k++) {
      if (((a.states[k] as number[])[0] as number) <= ((a.states[k - 1] as number[])[0] as number)) {
        problems.push(`${source}: agents[${i}].states[${k}][0]: times must increase`);
        break;
      }
    }
  });
  if (problems.length === 0) {
    // NAVSIM's PDM-Closed refuses a scene whose drivable map (what touches the square about the ego centre) is empty.
    const area = proximalAreaMap(new DrivingMap(sceneMap(s)), egoCenter(s.ego));
    if (area.roadblocks.size === 0 && area.intersections.length === 0 && area.carparks.length === 0)
      problems.push(`${source}: ego: no roadblock, intersection or carpark within ${MAP_RADIUS} m of the ego centre (NAVSIM's drivable map would be empty)`);
  }
  if (problems.length > 0) throw new SceneFormatError(problems.slice(0, 5).join('\n'));
  return s;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '<root>';
}

/** The scene's map as `MapData`. */
export function sceneMap(s: Scene): MapData {
  return s.map as MapData;
}
