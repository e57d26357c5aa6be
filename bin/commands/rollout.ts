/**
 * `gymwire rollout`: collect trajectories from one or more servers with an ONNX model, an env's
 * baseline agent or random actions, into an Arrow dataset (docs/datasets.md), with a progress bar,
 * a summary table and an optional animated WebP preview. Baseline agents live with their envs; this
 * file (bin/ may import both sides) adapts them into client policies.
 *
 * @example
 * gymwire rollout --url ws://127.0.0.1:8765 --env gymwire/CartPole-v1 --policy model.onnx --sessions 64 --episodes 1000 --out data/
 */
import { join } from 'node:path';

import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';

import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { DatasetWriteError, TrajectoryWriter } from '../../client/ts/dataset/writer.ts';
import type { ImageFormat } from '../../client/ts/dataset/columns.ts';
import { OnnxPolicy } from '../../client/ts/policies/onnx.ts';
import { perSessionPolicy, RandomPolicy } from '../../client/ts/policy.ts';
import type { Policy } from '../../client/ts/policy.ts';
import { Rollout } from '../../client/ts/rollout/engine.ts';
import type { PartialMode, RolloutSummary } from '../../client/ts/rollout/engine.ts';
import { findImage, spaceHasImage, writeAnimatedWebp } from '../../client/ts/rollout/preview.ts';
import { makeAgent, AGENTS as B2D_AGENTS } from '../../envs/bench2drive/agents.ts';
import type { Agent } from '../../envs/bench2drive/agents.ts';
import { constantVelocityFromObs } from '../../envs/navsim/agents.ts';
import { parseBusyPoll } from '../../runtime/busy-poll.ts';
import { Tensor } from '../../protocol/tensor.ts';
import { prepareFormat } from './dataset-format.ts';
import { stderrLogger } from './logger.ts';

export interface RolloutCliOptions {
  url: string[];
  env: string;
  kwargs: string;
  policy: string;
  device: 'cpu' | 'cuda';
  greedy?: boolean;
  sessions: string;
  episodes: string;
  maxSteps?: string;
  out?: string;
  overwrite?: boolean;
  images: ImageFormat;
  groups: string;
  seed: string;
  token?: string;
  onStop: PartialMode;
  preview?: string | boolean;
  previewEpisodes: string;
  progress: boolean;
  /** 'auto' (default), 0 or µs: how the clients wait for answers (ClientOptions.busyPoll). */
  busyPollUs?: string;
  /** How long (ms) a lost server may take to come back before the rollout fails (default 60 s). */
  reconnectTimeout?: string;
  /** arrow (default), lerobot or minari (written by the Python SDK: dataset-format.ts). */
  format?: string;
  /** LeRobot's frame rate (default: the env family's). */
  fps?: string;
  /** The LeRobot repo id or the Minari dataset id. */
  datasetId?: string;
}

/** Baselines the CLI knows, by name: each builds a policy and may add make kwargs. */
export const BASELINES: Record<string, { describe: string; make(): { policy: Policy; kwargs?: Record<string, unknown> } }> = {
  'navsim:constant-velocity': {
    describe: 'NAVSIM: drive straight on at the current speed (from ego_status)',
    make: () => ({
      policy: perSessionPolicy(
        'navsim:constant-velocity',
        (obs) => Tensor.from('float32', [8, 3], constantVelocityFromObs((obs as Record<string, Tensor>)['ego_status']!.data as Float32Array).flat()),
        { accepts: ({ observationSpace: o }) => (o.type === 'dict' && o.spaces['ego_status'] ? null : 'needs a NAVSIM observation with ego_status') },
      ),
    }),
  },
  ...Object.fromEntries(
    B2D_AGENTS.map((name) => [
      `bench2drive:${name}`,
      {
        describe: `Bench2Drive: the ${name} agent`,
        make: () => {
          const agents = new Map<string, Agent>();
          const agentFor = (session: string) => agents.get(session) ?? agents.set(session, makeAgent(name)).get(session)!;
          const policy = perSessionPolicy(
            `bench2drive:${name}`,
            (obs, session, info) => Tensor.from('float32', [3], agentFor(session).act(obs as Record<string, unknown>, info)),
            {
              episodeStart: (session, info) => agentFor(session).reset(info),
            },
          );
          return { policy, kwargs: makeAgent(name).makeKwargs };
        },
      },
    ]),
  ),
};

async function buildPolicy(spec: string, opts: RolloutCliOptions): Promise<{ policy: Policy; kwargs?: Record<string, unknown> }> {
  if (spec === 'random') return { policy: new RandomPolicy({ seed: Number(opts.seed) }) };
  if (spec.endsWith('.onnx')) {
    const logger = stderrLogger('warn');
    return { policy: await OnnxPolicy.load(spec, { device: opts.device, greedy: opts.greedy ?? false, seed: Number(opts.seed), logger }) };
  }
  const baseline = BASELINES[spec];
  if (!baseline) throw new Error(`unknown policy ${JSON.stringify(spec)}: give a .onnx file, random, or one of ${Object.keys(BASELINES).join(', ')}`);
  return baseline.make();
}

function table(rows: [string, string][]): string {
  const w = Math.max(...rows.map(([k]) => k.length));
  const line = `+${'-'.repeat(w + 2)}+${'-'.repeat(Math.max(...rows.map(([, v]) => v.length)) + 2)}+`;
  const vw = line.length - w - 7;
  return [line, ...rows.map(([k, v]) => `| ${k.padEnd(w)} | ${v.padEnd(vw)} |`), line].join('\n');
}

const fmt = (x: number | null, digits = 2) => (x === null ? '-' : x.toFixed(digits));

export function summaryTable(s: RolloutSummary, extra: [string, string][] = []): string {
  return table([
    ['policy', s.policy],
    ['sessions / groups', `${s.sessions} / ${s.groups}`],
    ['episodes complete', String(s.episodes)],
    ['episodes incomplete', String(s.incomplete)],
    ['episodes discarded', String(s.discarded)],
    ['env steps', String(s.steps)],
    ['steps/s', fmt(s.stepsPerSec, 0)],
    ['mean return', fmt(s.meanReturn)],
    ['mean length', fmt(s.meanLength, 1)],
    ['wall time (s)', fmt(s.elapsedMs / 1000)],
    ['sessions lost / remade', `${s.lostSessions} / ${s.recoveredSessions}`],
    ...extra,
  ]);
}

export function registerRollout(program: Command): void {
  program
    .command('rollout')
    .description('collect trajectories from gymwire servers into an Arrow, LeRobot or Minari dataset (docs/datasets.md)')
    .requiredOption('--url <url>', 'server URL (repeat for several servers; sessions are split evenly)', (v: string, prev: string[] = []) => [...prev, v])
    .requiredOption('--env <id>', 'env id, e.g. gymwire/CartPole-v1')
    .option('--kwargs <json>', 'make kwargs as JSON', '{}')
    .option('--policy <policy>', `model.onnx, random, or a baseline (${Object.keys(BASELINES).join(', ')})`, 'random')
    .option('--device <device>', 'ONNX execution provider: cpu or cuda (falls back to cpu, logged)', 'cpu')
    .option('--greedy', 'argmax actions instead of sampling (ONNX, Discrete)')
    .option('--sessions <n>', 'sessions in total', '64')
    .option('--episodes <n>', 'episodes to collect', '1000')
    .option('--max-steps <n>', 'stop after this many env steps')
    .option('--out <dir>', 'write the dataset here (refused if it holds one already)')
    .option('--overwrite', 'replace a dataset already in --out (its dataset files only)')
    .option('--images <format>', 'store uint8 image observations as raw, png or jpeg', 'raw')
    .option(
      '--format <format>',
      "dataset format: arrow, lerobot or minari (these two through the Python SDK's writer: pip install 'gymwire[lerobot]' / 'gymwire[minari]')",
      'arrow',
    )
    .option('--fps <n>', "lerobot: frames per second (default: the env family's rate)")
    .option(
      '--dataset-id <id>',
      'lerobot: the repo id (default gymwire/<dir name>); minari: the dataset id, which --out must end with (default: its last part)',
    )
    .option('--groups <n>', 'session groups stepping concurrently (1 = lock-step)', '2')
    .option('--seed <n>', 'seed: session i starts from seed + i; also the policy sampler', '0')
    .option('--token <token>', 'auth token (also GYMWIRE_TOKEN)')
    .option('--on-stop <mode>', 'on Ctrl-C or --max-steps: keep (write running episodes as incomplete), discard, or finish them', 'keep')
    .option('--preview [file]', 'write an animated WebP of the first episodes (default DIR/preview.webp)')
    .option('--preview-episodes <n>', 'episodes in the preview', '3')
    .option('--no-progress', 'no progress bar')
    .option(
      '--busy-poll-us <us>',
      "how the clients wait for answers: 'auto' polls the socket for a window adapted to how soon answers come (saves waking an idle core; stays off against a remote or slow server), N polls N µs after every request, 0 never polls",
      'auto',
    )
    .option('--reconnect-timeout <ms>', 'how long a lost server may take to come back (its sessions resumed or remade) before the rollout fails', '60000')
    .action(async (opts: RolloutCliOptions) => {
      const summary = await runRolloutCommand(opts);
      process.exitCode = summary.stoppedBy ? STOP_EXIT_CODES[summary.stoppedBy] : summary.episodes + summary.incomplete > 0 ? 0 : 1;
    });
}

/**
 * Signals that stop a rollout the way --on-stop says (Ctrl-C, a scheduler's SIGTERM, a closed
 * terminal's SIGHUP), and the exit code each leaves once the dataset is written: 128 + the
 * signal's number, as a shell reports a process the signal ended.
 */
export const STOP_EXIT_CODES = { SIGINT: 130, SIGHUP: 129, SIGTERM: 143 } as const;
export type StopSignal = keyof typeof STOP_EXIT_CODES;

/** The command's body, callable from tests. `stoppedBy` names the signal that stopped it early, if one did. */
export async function runRolloutCommand(
  opts: RolloutCliOptions,
  out: NodeJS.WritableStream = process.stdout,
): Promise<RolloutSummary & { stoppedBy: StopSignal | null }> {
  if (!['raw', 'png', 'jpeg'].includes(opts.images)) throw new Error(`--images must be raw, png or jpeg, got ${opts.images}`);
  if (!['keep', 'discard', 'finish'].includes(opts.onStop)) throw new Error(`--on-stop must be keep, discard or finish, got ${opts.onStop}`);
  const busyPoll = parseBusyPoll(opts.busyPollUs ?? 'auto');
  const reconnectTimeoutMs = Number(opts.reconnectTimeout ?? 60_000);
  if (!Number.isInteger(reconnectTimeoutMs) || reconnectTimeoutMs < 0)
    throw new Error(`--reconnect-timeout must be a non-negative integer (ms), got ${opts.reconnectTimeout}`);
  const { policy, kwargs: policyKwargs } = await buildPolicy(opts.policy, opts);
  const wantPreview = opts.preview !== undefined && opts.preview !== false;
  let userKwargs: Record<string, unknown>;
  try {
    userKwargs = JSON.parse(opts.kwargs) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`--kwargs must be a JSON object, got ${JSON.stringify(opts.kwargs)}: ${(err as Error).message}`, { cause: err });
  }
  if (userKwargs === null || typeof userKwargs !== 'object' || Array.isArray(userKwargs)) throw new Error(`--kwargs must be a JSON object, got ${opts.kwargs}`);
  const kwargs = { ...(policyKwargs ?? {}), ...userKwargs };
  const format = opts.out ? await prepareFormat(opts.format ?? 'arrow', opts.out, opts.overwrite ?? false) : null;
  const token = opts.token ?? process.env.GYMWIRE_TOKEN;
  const clients: GymwireClient[] = [];
  // From here until the dataset is written and the sessions closed, a signal stops the rollout
  // instead of the process (a second one quits at once).
  let stoppedBy: StopSignal | null = null;
  let stopRollout = () => {};
  const onSignal = (signal: StopSignal) => {
    if (stoppedBy !== null) process.exit(STOP_EXIT_CODES[signal]);
    stoppedBy = signal;
    stopRollout();
  };
  for (const signal of Object.keys(STOP_EXIT_CODES) as StopSignal[]) process.on(signal, onSignal);
  try {
    for (const url of opts.url) clients.push(await connect(url, { busyPoll, reconnectTimeoutMs, ...(token ? { token } : {}) }));
    const total = Number(opts.sessions);
    const targets = clients.map((client, i) => ({
      client,
      url: opts.url[i]!,
      sessions: Math.floor(total / clients.length) + (i < total % clients.length ? 1 : 0),
    }));
    const probe = await clients[0]!.make(opts.env, kwargs);
    await probe.close();
    // Envs whose observations hold no image are previewed through render(); ask for frames at make.
    const renderPreview =
      wantPreview &&
      !spaceHasImage(probe.observationSpace) &&
      userKwargs['render_mode'] === undefined &&
      (probe.metadata['render_modes'] as string[] | undefined)?.includes('rgb_array');
    const episodes = Number(opts.episodes);
    const writer = opts.out
      ? await TrajectoryWriter.create(format!.arrowDir, {
          envId: opts.env,
          envKwargs: kwargs,
          observationSpace: probe.observationSpace,
          actionSpace: probe.actionSpace,
          // The other formats' writers read raw tensors; a staging copy left by a failed run is ours to replace.
          images: format!.format === 'arrow' ? opts.images : 'raw',
          overwrite: format!.format === 'arrow' ? (opts.overwrite ?? false) : true,
        })
      : null;
    const previewN = Number(opts.previewEpisodes);
    const frames = new Map<number, Promise<Tensor | null>[]>();
    const bar =
      opts.progress && (process.stderr as NodeJS.WriteStream).isTTY
        ? new SingleBar({ format: 'episodes {bar} {value}/{total} | {sps} steps/s | mean return {ret}', hideCursor: true })
        : null;
    bar?.start(episodes, 0, { sps: '0', ret: '-' });
    let lastDraw = 0;
    const rollout = new Rollout({
      envId: opts.env,
      kwargs: renderPreview ? { ...kwargs, render_mode: 'rgb_array' } : kwargs,
      targets,
      policy,
      episodes,
      groups: Number(opts.groups),
      seed: Number(opts.seed),
      writer,
      ...(opts.maxSteps ? { maxSteps: Number(opts.maxSteps), onLimit: opts.onStop } : {}),
      onProgress: (p) => {
        const now = performance.now();
        if (now - lastDraw < 100) return;
        lastDraw = now;
        bar?.update(p.episodes, { sps: p.stepsPerSec.toFixed(0), ret: p.meanReturn === null ? '-' : p.meanReturn.toFixed(2) });
      },
      onStep: wantPreview
        ? (episodeId, session, step, client) => {
            if (episodeId >= previewN) return;
            const list = frames.get(episodeId) ?? frames.set(episodeId, []).get(episodeId)!;
            const own = findImage(step.obs);
            if (own) list.push(Promise.resolve(new Tensor('uint8', own.shape, (own.data as Uint8Array).slice())));
            else if (renderPreview && !step.terminated && !step.truncated) {
              // Requests for one session run in order, so this renders the state right after this step.
              list.push(
                client.request('render', { session_id: session, format: 'tensor' }).then(
                  (r) => (r.frame instanceof Tensor ? r.frame : null),
                  () => null,
                ),
              );
            }
          }
        : undefined,
    });
    // A signal that came while the sessions were being made stops the rollout as it starts.
    if (stoppedBy !== null) rollout.stop(opts.onStop);
    stopRollout = () => rollout.stop(opts.onStop);
    let summary: RolloutSummary;
    try {
      summary = await rollout.run();
    } catch (err) {
      // Keep what was collected (the running episodes are already marked incomplete). A failed
      // write is the better message: it says which parts were kept.
      const closing = await writer?.close({ policy: policy.name, servers: opts.url, sessions: total }).then(
        () => null,
        (e: unknown) => e,
      );
      throw closing instanceof DatasetWriteError ? closing : err;
    } finally {
      bar?.update(rollout.progress().episodes);
      bar?.stop();
      await policy.close?.();
    }
    const extra: [string, string][] = [];
    if (writer) {
      const manifest = await writer.close({ policy: policy.name, servers: opts.url, sessions: total });
      const written = await format!.finish({
        ...(opts.fps !== undefined ? { fps: Number(opts.fps) } : {}),
        ...(opts.datasetId !== undefined ? { datasetId: opts.datasetId } : {}),
        overwrite: opts.overwrite ?? false,
        progress: bar !== null,
      });
      const counts = written?.['counts'] as { episodes: number; steps: number } | undefined;
      extra.push([
        'dataset',
        written && counts
          ? `${opts.out} (${format!.format}: ${counts.episodes} episodes, ${counts.steps} frames)`
          : `${opts.out} (${manifest.steps_files.length} steps file(s), ${manifest.counts.steps} rows)`,
      ]);
    }
    if (wantPreview) {
      const path = typeof opts.preview === 'string' ? opts.preview : join(opts.out ?? '.', 'preview.webp');
      const all = (await Promise.all([...frames.entries()].sort(([a], [b]) => a - b).flatMap(([, l]) => l))).filter((f): f is Tensor => f !== null);
      if (all.length > 0) {
        const w = await writeAnimatedWebp(path, all.slice(0, 600));
        extra.push(['preview', `${path} (${w.frames} frames, ${w.width}x${w.height})`]);
      } else extra.push(['preview', 'none: the env has no camera observation and does not render']);
    }
    out.write(`${summaryTable(summary, extra)}\n`);
    return { ...summary, stoppedBy };
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
    for (const signal of Object.keys(STOP_EXIT_CODES) as StopSignal[]) process.off(signal, onSignal);
  }
}
