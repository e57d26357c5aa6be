/**
 * A scripted agent drives a whole Bench2Drive route through MCP tools only, with the official MCP
 * TypeScript client, and reports what it cost in calls and tokens.
 *
 * The agent acts at agent scale: each call is one `Bench2Drive-v0__follow_waypoints_for` span of
 * up to 1 s (20 ticks) along the route ahead that the previous span reported, at a cruise speed,
 * stopping early at an infraction (then it slows down). The same policy is then run one tick per
 * call, the way a per-tick tool (`Bench2Drive-v0__drive`) makes an agent work, and the two are
 * compared per tick driven: calls, and the tokens the calls and their results take (characters / 4,
 * the usual estimate for English and JSON).
 *
 *   npx tsx examples/mcp-bench2drive/main.ts [--route ROUTE_ID] [--span TICKS]
 *
 * It fails (exit 1) when the route does not end, when a score is missing, or when spans do not
 * take at least ten times fewer calls and tokens than ticks.
 */
import { run, startHarness } from '../mcp-common/harness.ts';
import type { Harness } from '../mcp-common/harness.ts';

const ENV_ID = 'gymwire/Bench2Drive-v0';
const FOLLOW = 'Bench2Drive-v0__follow_waypoints_for';
const CRUISE_MPS = 6;
const CAREFUL_MPS = 3;

type Point = [number, number];

interface Span {
  ticks: number;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  stopped: string;
  route_completion: number;
  new_infractions: unknown[];
  route_ahead: Point[];
}

interface Cost {
  calls: number;
  chars: number;
}

/** Waypoints 0.5 s apart at `speed` along `path` (ego frame), as follow_waypoints_for takes them. */
function resample(path: Point[], speed: number, count = 8): Point[] {
  const step = speed * 0.5;
  const out: Point[] = [];
  let [px, py] = [0, 0];
  let along = 0;
  let next = step;
  for (const [x, y] of path) {
    const len = Math.hypot(x - px, y - py);
    while (len > 0 && along + len >= next && out.length < count) {
      const f = (next - along) / len;
      out.push([px + f * (x - px), py + f * (y - py)]);
      next += step;
    }
    along += len;
    [px, py] = [x, y];
  }
  while (out.length < 2) out.push([step * (out.length + 1), 0]);
  return out;
}

/** Drives one route to its end in spans of `span` ticks; returns the result and what the calls cost. */
async function drive(h: Harness, route: string, span: number): Promise<{ score: number; completion: number; ticks: number; cost: Cost }> {
  const cost: Cost = { calls: 0, chars: 0 };
  const call = async (tool: string, args: Record<string, unknown>) => {
    const res = await h.call(tool, args);
    cost.calls++;
    // What a model reads and writes: the arguments it sends and the text result it gets back.
    cost.chars += JSON.stringify({ tool, args }).length + JSON.stringify(res).length;
    return res;
  };
  const session = (await call('make_env', { env_id: ENV_ID, kwargs: JSON.stringify({ route }) })).session_id as string;
  await call('reset', { session_id: session, seed: 0 });
  let path: Point[] = [
    [2, 0],
    [4, 0],
    [6, 0],
    [8, 0],
  ];
  let speed = CRUISE_MPS;
  let ticks = 0;
  let last: (Span & { info?: Record<string, unknown> }) | null = null;
  while (ticks < 10_000) {
    const res = await call(FOLLOW, { session_id: session, waypoints: resample(path, speed), ticks: span, until: 'infraction' });
    last = { ...(res.result as Span), reward: res.reward as number, terminated: res.terminated as boolean, truncated: res.truncated as boolean };
    ticks += last.ticks;
    if (last.terminated || last.truncated) break;
    path = last.route_ahead.length >= 2 ? last.route_ahead : path;
    // After an infraction the agent slows down for a while, as a cautious driver would.
    speed = last.stopped === 'infraction' ? CAREFUL_MPS : Math.min(CRUISE_MPS, speed + 1);
  }
  if (!last || !(last.terminated || last.truncated)) throw new Error(`route ${route} did not end within 10000 ticks`);
  const info = (await call('Bench2Drive-v0__get_route_info', { session_id: session })).result as Record<string, unknown>;
  await call('close_env', { session_id: session });
  const completion = info.route_completion as number;
  const penalty = info.infraction_penalty as number;
  if (typeof completion !== 'number' || typeof penalty !== 'number')
    throw new Error(`no route completion / penalty in get_route_info: ${JSON.stringify(info).slice(0, 300)}`);
  return { score: completion * penalty, completion, ticks, cost };
}

run(async () => {
  const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const span = Number(arg('--span') ?? 20);
  const h = await startHarness('mcp-bench2drive-example');
  try {
    const { tools } = await h.client.listTools();
    if (!tools.some((t) => t.name === FOLLOW)) throw new Error(`the server lists no ${FOLLOW} tool`);
    const route = arg('--route') ?? 'SignalizedJunctionLeftTurn_0';
    const spans = await drive(h, route, span);
    const perTick = await drive(h, route, 1);
    const tokens = (c: Cost) => Math.round(c.chars / 4);
    const line = (what: string, r: typeof spans) =>
      `${what}: ${r.ticks} ticks, ${r.cost.calls} calls, ~${tokens(r.cost)} tokens (${(tokens(r.cost) / r.ticks).toFixed(1)} per tick), driving score ${r.score.toFixed(2)}, completion ${r.completion.toFixed(1)} %`;
    console.log(`route ${route}`);
    console.log(line(`spans of ${span} ticks`, spans));
    console.log(line('one tick per call', perTick));
    // Per tick driven, so routes driven at different speeds compare fairly.
    const callRatio = perTick.cost.calls / perTick.ticks / (spans.cost.calls / spans.ticks);
    const tokenRatio = tokens(perTick.cost) / perTick.ticks / (tokens(spans.cost) / spans.ticks);
    console.log(`per tick driven, spans take ${callRatio.toFixed(1)}x fewer calls and ${tokenRatio.toFixed(1)}x fewer tokens`);
    if (callRatio < 10 || tokenRatio < 10) throw new Error('spans should take at least 10x fewer calls and tokens per tick than one call per tick');
    console.log('OK');
  } finally {
    await h.close();
  }
});
