import { describe, expect, it } from 'vitest';

import { makeAgent } from '../../../envs/bench2drive/agents.ts';
import { Bench2DriveEnv } from '../../../envs/bench2drive/env.ts';
import { evaluateBench2Drive } from '../../../envs/bench2drive/eval.ts';

const local = (k: Record<string, unknown>) => new Bench2DriveEnv(k);

describe('baselines on the whole route set', () => {
  it('the expert reaches DS >= 85 and SR >= 0.8', async () => {
    const rep = await evaluateBench2Drive({ makeEnv: local, agent: makeAgent('expert') });
    expect(rep.routes).toBe(70);
    expect(rep.driving_score).toBeGreaterThanOrEqual(85);
    expect(rep.success_rate).toBeGreaterThanOrEqual(0.8);
    expect(rep.ability.mean).toBeGreaterThan(0.8);
    expect(rep.efficiency).not.toBeNull();
  }, 120_000);

  it('the naive agent scores far lower and commits the provoked infractions', async () => {
    const rep = await evaluateBench2Drive({ makeEnv: local, agent: makeAgent('naive') });
    expect(rep.driving_score).toBeLessThan(60);
    expect(rep.success_rate).toBeLessThan(0.2);
    const by = (id: string) => rep.records.find((r) => r.route_id === id)!;
    const parked = by('ParkedObstacle_0');
    expect(parked.infractions['collisions_vehicle']!.length).toBeGreaterThan(0);
    expect(parked.infractions['collisions_vehicle']![0]!.time).toBeGreaterThan(0);
    expect(by('VanillaSignalizedTurnEncounterRedLight_3').infractions['red_light']!.length).toBe(1);
    expect(by('VanillaNonSignalizedTurnEncounterStopsign_0').infractions['stop_infraction']!.length).toBe(1);
    expect(by('DynamicObjectCrossing_0').infractions['collisions_pedestrian']!.length).toBe(1);
  }, 120_000);
});
