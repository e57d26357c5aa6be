/**
 * Scoring one scene end to end, as `navsim/evaluate/pdm_score.py` does: the agent's poses become 41
 * reference states, the LQR tracker and bicycle model simulate them, PDM-Closed is run for progress
 * normalisation, both are scored together, and for v2 the human penalty filter is applied on
 * original scenes. Returns every sub-metric, the raw quantities and the simulated states.
 *
 * @example
 * const r = scoreScene(scene, scene.agent_trajectory.poses, { version: 1 });
 * r.metrics.pdms;
 */
import { STATE_SIZE } from '../driving/bicycle.ts';
import { DrivingMap } from '../driving/map.ts';
import { simulate } from '../driving/lqr.ts';
import type { PdmClosedResult } from './pdm-closed.ts';
import { pdmClosed } from './pdm-closed.ts';
import type { ScoredProposal, ScoringWorld, Version } from './pdm.ts';
import { aggregate, buildWorld, epdms, humanFilter, pdmsV2, proposalMetrics } from './pdm.ts';
import type { Scene } from './scene.ts';
import { egoStateArray, referenceStates, sampleStates } from './trajectory.ts';

export interface SceneMetrics {
  nc: number;
  dac: number;
  ddc: number;
  tlc: number;
  ep: number;
  ttc: number;
  comfort: number;
  lk: number;
  hc: number;
  /** EC when the previous frame's plan is known, else null (scored as 1 in `epdms`). */
  ec: number | null;
  multiplicative_prod: number;
  /** v1: PDMS; v2: EPDMS without EC (/14), NAVSIM's per-row score. */
  pdms: number;
  /** v2 only: EPDMS with EC (EC = 1 when unavailable), /16. */
  epdms: number | null;
  /** The reward: PDMS (v1) or EPDMS (v2). */
  score: number;
}

export interface SceneResult {
  version: Version;
  metrics: SceneMetrics;
  progressRawM: number;
  pdmClosedProgressM: number;
  collisionTimeS: number | null;
  ttcTimeS: number | null;
  simulatedStates: Float64Array;
  referenceStates: Float64Array;
  pdmClosed: { states: Float64Array; scores: ScoredProposal };
  agentBeforeFilter: ScoredProposal;
  human: ScoredProposal | null;
  egoAreas: { multipleLanesSteps: number[]; nonDrivableSteps: number[]; oncomingSteps: number[] };
}

/** Cached per-scene work (map index, worlds, PDM-Closed) so repeated scoring is cheap. */
export class SceneScorer {
  readonly map: DrivingMap;
  private readonly worlds = new Map<Version, ScoringWorld>();
  private readonly closed = new Map<Version, PdmClosedResult>();
  private history: Float64Array | null | undefined;

  constructor(readonly scene: Scene) {
    this.map = new DrivingMap(scene.map);
  }

  world(version: Version): ScoringWorld {
    let w = this.worlds.get(version);
    if (!w) {
      w = buildWorld(this.scene, version, this.map);
      this.worlds.set(version, w);
    }
    return w;
  }

  pdmClosed(version: Version): PdmClosedResult {
    let r = this.closed.get(version);
    if (!r) {
      r = pdmClosed(this.scene, this.world(version), version);
      this.closed.set(version, r);
    }
    return r;
  }

  /**
   * v2 history comfort's past states: the logged ego from the first history frame to t = 0,
   * interpolated at 0.1 s from the first frame up to (excluding) t = 0, less the last sample
   * (NAVSIM's `history_time_us[:-1]`): 14 states, -1.5 s to -0.2 s, for 1.5 s of history.
   */
  historyStates(): Float64Array | null {
    if (this.history !== undefined) return this.history;
    const h = this.scene.ego_history;
    if (!h || h.length === 0) return (this.history = null);
    const t0 = this.scene.timestamp_us;
    const sorted = [...h].sort((a, b) => a.t - b.t);
    const times = [...sorted.map((e) => t0 + Math.round(e.t * 1e6)), t0];
    const knots = [...sorted.map((e) => egoStateArray(e)), egoStateArray(this.scene.ego)];
    const start = times[0] as number;
    const count = Math.max(0, Math.ceil((t0 - start) / 100000) - 1);
    const out = new Float64Array(count * STATE_SIZE);
    for (let i = 0; i < count; i++) {
      const s = sampleStates(times, knots, start + i * 100000, 1, 0.1);
      out.set(s, i * STATE_SIZE);
    }
    return (this.history = out);
  }

  /** Simulates poses (rear-axle frame) from the scene's ego state. */
  simulatePoses(poses: readonly (readonly number[])[], interval = 0.5): { reference: Float64Array; states: Float64Array } {
    const reference = referenceStates(this.scene.ego, poses, interval, this.scene.timestamp_us);
    return { reference, states: simulate(reference, egoStateArray(this.scene.ego)) };
  }

  /** Scores an agent trajectory. `prevStates` (v2) are the agent's simulated states from 0.5 s earlier, for EC. */
  score(poses: readonly (readonly number[])[], opts: { version: Version; interval?: number; ec?: number | null }): SceneResult {
    const version = opts.version;
    const world = this.world(version);
    const closed = this.pdmClosed(version);
    const { reference, states } = this.simulatePoses(poses, opts.interval ?? 0.5);
    const so = { version, historyStates: version === 2 ? this.historyStates() : null };
    const [pc, agent] = aggregate([proposalMetrics(closed.states, world, so), proposalMetrics(states, world, so)], version) as [ScoredProposal, ScoredProposal];
    let final: ScoredProposal = agent;
    let human: ScoredProposal | null = null;
    if (version === 2 && this.scene.scene_type === 'original' && this.scene.human_trajectory) {
      const hs = this.simulatePoses(this.scene.human_trajectory.poses, this.scene.human_trajectory.interval_length).states;
      // NAVSIM scores the logged human alone (its progress normalised by itself) and without history.
      human = aggregate([proposalMetrics(hs, world, { version, historyStates: null })], version)[0] as ScoredProposal;
      const filtered = humanFilter(agent, human);
      final = { ...filtered, multiplicative: filtered.nc * filtered.dac * filtered.ddc * filtered.tlc, pdms: pdmsV2(filtered) };
    }
    const ec = opts.ec ?? null;
    const e = version === 2 ? epdms(final, ec ?? 1) : null;
    const metrics: SceneMetrics = {
      nc: final.nc,
      dac: final.dac,
      ddc: final.ddc,
      tlc: final.tlc,
      ep: final.ep,
      ttc: final.ttc,
      comfort: final.comfort,
      lk: final.lk,
      hc: final.hc,
      ec,
      multiplicative_prod: final.multiplicative,
      pdms: final.pdms,
      epdms: e,
      score: version === 1 ? final.pdms : (e as number),
    };
    return {
      version,
      metrics,
      progressRawM: agent.progressRaw,
      pdmClosedProgressM: pc.progressRaw,
      collisionTimeS: agent.collisionStep === null ? null : agent.collisionStep * 0.1,
      ttcTimeS: agent.ttcStep === null ? null : agent.ttcStep * 0.1,
      simulatedStates: states,
      referenceStates: reference,
      pdmClosed: { states: closed.states, scores: pc },
      agentBeforeFilter: agent,
      human,
      egoAreas: { multipleLanesSteps: agent.multipleLanesSteps, nonDrivableSteps: agent.nonDrivableSteps, oncomingSteps: agent.oncomingSteps },
    };
  }
}

/** One-shot scoring of a scene (builds a {@link SceneScorer}). */
export function scoreScene(
  scene: Scene,
  poses: readonly (readonly number[])[],
  opts: { version: Version; interval?: number; ec?: number | null },
): SceneResult {
  return new SceneScorer(scene).score(poses, opts);
}
