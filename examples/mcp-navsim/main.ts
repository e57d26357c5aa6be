/**
 * A scripted agent drives a NAVSIM scene through MCP tools and reads its PDM Score, using only the
 * official MCP TypeScript client, the way an LLM agent would: it reads the route and the ego state
 * through the env's tools (`NavsimEnv-v1__get_route_info`, `NavsimEnv-v1__get_ego_state`), plans 8
 * poses over 4 s that follow the route centreline at the current speed, submits them with
 * `NavsimEnv-v1__step_with_waypoints`, and prints the score with every sub-metric.
 *
 *   npx tsx examples/mcp-navsim/main.ts [--scenes N]
 *
 * The agent discovers argument names and result layouts from the tools' JSON Schemas and results
 * rather than hard-coding them, as a model reading the tool list would. It fails (exit 1) when
 * the env is not registered, when a tool is missing, or when a score is not in [0, 1].
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import { run, startHarness } from '../mcp-common/harness.ts';

const ENV_ID = 'gymwire/NavsimEnv-v1';
const HORIZON = 8;
const DT = 0.5;

type Point = [number, number];
type Json = unknown;

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The numbers of a value as the MCP layer writes tensors ({dtype, shape, values}) or as plain arrays. */
function unwrap(v: Json): Json {
  return isObj(v) && 'values' in v && 'shape' in v ? v.values : v;
}

/** Every polyline (>= 2 points of x, y) in a JSON value, with its key path. */
function polylines(v: Json, path = '', out: { path: string; points: Point[] }[] = []): { path: string; points: Point[] }[] {
  const value = unwrap(v);
  if (Array.isArray(value)) {
    const points = value.map((p) => {
      const q = unwrap(p);
      if (Array.isArray(q) && q.length >= 2 && isNum(q[0]) && isNum(q[1])) return [q[0], q[1]] as Point;
      if (isObj(q) && isNum(q.x) && isNum(q.y)) return [q.x, q.y] as Point;
      return null;
    });
    if (points.length >= 2 && points.every((p) => p !== null)) out.push({ path, points: points as Point[] });
    else value.forEach((x, i) => polylines(x, `${path}[${i}]`, out));
  } else if (isObj(value)) {
    for (const [k, x] of Object.entries(value)) polylines(x, path ? `${path}.${k}` : k, out);
  }
  return out;
}

/** The first number under a key matching `re` (arrays give their first elements' norm for velocities). */
function findNumber(v: Json, re: RegExp): number | null {
  const value = unwrap(v);
  if (!isObj(value)) return null;
  for (const [k, x] of Object.entries(value)) {
    const inner = unwrap(x);
    if (re.test(k)) {
      if (isNum(inner)) return inner;
      if (Array.isArray(inner) && isNum(inner[0])) return Math.hypot(inner[0], isNum(inner[1]) ? inner[1] : 0);
    }
  }
  for (const x of Object.values(value)) {
    const found = findNumber(x, re);
    if (found !== null) return found;
  }
  return null;
}

/** Poses (x, y, heading) at 0.5 s steps along `line` from the origin at `speed`; straight ahead without a line. */
function plan(line: Point[] | null, speed: number): [number, number, number][] {
  const poses: [number, number, number][] = [];
  for (let i = 1; i <= HORIZON; i++) {
    const s = speed * DT * i;
    if (!line) {
      poses.push([s, 0, 0]);
      continue;
    }
    // Arc length along the line from its point closest to the ego.
    let start = 0;
    for (let k = 1; k < line.length; k++) if (Math.hypot(...line[k]!) < Math.hypot(...line[start]!)) start = k;
    let left = s;
    let k = start;
    let pose: [number, number, number] | null = null;
    while (k + 1 < line.length) {
      const [ax, ay] = line[k]!;
      const [bx, by] = line[k + 1]!;
      const len = Math.hypot(bx - ax, by - ay);
      const heading = Math.atan2(by - ay, bx - ax);
      if (left <= len || k + 2 === line.length) {
        const f = len > 0 ? left / len : 0;
        pose = [ax + f * (bx - ax), ay + f * (by - ay), heading];
        break;
      }
      left -= len;
      k++;
    }
    poses.push(pose ?? [s, 0, 0]);
  }
  return poses;
}

/** Arguments for step_with_waypoints from its JSON Schema: the array property gets the poses in the layout its items ask for. */
function waypointArgs(schema: Record<string, unknown>, poses: [number, number, number][]): Record<string, unknown> {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const isArray = (p: Record<string, unknown>) =>
    p.type === 'array' || (Array.isArray(p.anyOf) && (p.anyOf as Record<string, unknown>[]).some((x) => x.type === 'array'));
  const name = Object.keys(props).find((k) => k !== 'session_id' && isArray(props[k]!));
  if (!name) throw new Error(`step_with_waypoints has no array argument: ${JSON.stringify(schema)}`);
  const items = (props[name]!.items ?? {}) as Record<string, unknown>;
  const itemProps = (items.properties ?? {}) as Record<string, unknown>;
  const value =
    items.type === 'object'
      ? poses.map(([x, y, h]) => ({ x, y, ...('heading' in itemProps ? { heading: h } : 'yaw' in itemProps ? { yaw: h } : {}) }))
      : items.maxItems === 2
        ? poses.map(([x, y]) => [x, y])
        : poses;
  return { [name]: value };
}

run(async () => {
  const scenes = Number(process.argv[process.argv.indexOf('--scenes') + 1] ?? 3) || 3;
  const h = await startHarness('mcp-navsim-example');
  try {
    const { envs } = (await h.call('list_envs')) as { envs: { id: string }[] };
    if (!envs.some((e) => e.id === ENV_ID)) {
      throw new Error(`${ENV_ID} is not registered on this server (envs: ${envs.map((e) => e.id).join(', ')}); this example needs the NAVSIM env`);
    }
    // Cameras on: their current frames come back from reset as MCP image content (PNG).
    const made = await h.call('make_env', { env_id: ENV_ID, kwargs: { cameras: true } });
    const session = made.session_id as string;
    // make_env names the MCP tool each of the env's own tools is published as.
    const mcpTool = new Map((made.tools as { name: string; mcp_tool?: string }[]).map((t) => [t.name, t.mcp_tool]));
    const tool = (own: string): string => {
      const name = mcpTool.get(own);
      if (!name) throw new Error(`${ENV_ID} has no ${own} MCP tool (tools: ${[...mcpTool.keys()].join(', ')})`);
      return name;
    };
    for (const need of ['get_route_info', 'get_ego_state', 'step_with_waypoints']) tool(need);
    const listed = (await h.call('list_session_tools', { session_id: session })).tools as { name: string; input_schema: Record<string, unknown> }[];
    const stepSchema = listed.find((t) => t.name === 'step_with_waypoints')!.input_schema;
    const scores: number[] = [];
    for (let seed = 0; seed < scenes; seed++) {
      const reset = (await h.client.callTool({ name: 'reset', arguments: { session_id: session, seed } })) as CallToolResult;
      if (reset.isError) throw new Error(`reset: ${JSON.stringify(reset.content)}`);
      const frames = reset.content.filter((c) => c.type === 'image' && c.mimeType === 'image/png').length;
      if (frames === 0) throw new Error('reset returned no camera images');
      const route = (await h.call(tool('get_route_info'), { session_id: session })).result;
      const ego = (await h.call(tool('get_ego_state'), { session_id: session })).result;
      const speed = findNumber(ego, /^(speed|v|vx|velocity|ego_velocity)$/i) ?? 0;
      // The centreline the agent should follow: a polyline named like one, else the longest.
      const lines = polylines(route).sort((a, b) => b.points.length - a.points.length);
      const line = lines.find((l) => /centre|center|route|lane|path|waypoint/i.test(l.path)) ?? lines[0] ?? null;
      const poses = plan(line?.points ?? null, speed);
      const res = await h.call(tool('step_with_waypoints'), { session_id: session, ...waypointArgs(stepSchema, poses) });
      const result = (res.result ?? {}) as Record<string, unknown>;
      const info = (res.info ?? result.info ?? result) as Record<string, unknown>;
      const score = [res.reward, result.pdm_score, result.pdms, result.score, info.pdm_score, info.score].find(isNum);
      if (score === undefined) throw new Error(`no score in the step_with_waypoints result: ${JSON.stringify(res).slice(0, 500)}`);
      if (score < 0 || score > 1) throw new Error(`PDM Score ${score} is outside [0, 1]`);
      if (res.terminated !== undefined && res.terminated !== true) throw new Error('a NAVSIM episode is one step: terminated must be true');
      const subs = ['nc', 'dac', 'ddc', 'tlc', 'ep', 'ttc', 'comfort', 'hc', 'lk', 'ec']
        .filter((k) => isNum(info[k]))
        .map((k) => `${k}=${(info[k] as number).toFixed(3)}`);
      console.log(
        `scene seed ${seed}: ${frames} camera images, speed ${speed.toFixed(2)} m/s, followed ${line ? line.path : 'a straight line'}; PDMS ${score.toFixed(4)} (${subs.join(' ')})`,
      );
      scores.push(score);
    }
    await h.call('close_env', { session_id: session });
    console.log(`mean PDMS over ${scores.length} scenes: ${(scores.reduce((a, b) => a + b, 0) / scores.length).toFixed(4)}`);
    console.log('OK');
  } finally {
    await h.close();
  }
});
