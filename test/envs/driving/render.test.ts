import { describe, expect, it } from 'vitest';

import { DrivingMap } from '../../../envs/driving/map.ts';
import type { MapData } from '../../../envs/driving/map.ts';
import { BEV_CHANNELS, CameraRig, SEM, SemanticGrid, castLidar, navsimCameras, renderBev } from '../../../envs/driving/render/index.ts';
import type { RenderBox } from '../../../envs/driving/render/index.ts';

const data: MapData = {
  name: 't',
  roadblocks: [
    {
      id: 'rb',
      kind: 'roadblock',
      polygon: [
        [-60, -3.5],
        [200, -3.5],
        [200, 3.5],
        [-60, 3.5],
      ],
      incoming: [],
      outgoing: [],
    },
  ],
  lanes: [
    {
      id: 'r',
      roadblock_id: 'rb',
      polygon: [
        [-60, -3.5],
        [200, -3.5],
        [200, 0],
        [-60, 0],
      ],
      centerline: [
        [-60, -1.75],
        [200, -1.75],
      ],
      speed_limit_mps: 15,
      incoming: [],
      outgoing: [],
    },
    {
      id: 'l',
      roadblock_id: 'rb',
      polygon: [
        [-60, 0],
        [200, 0],
        [200, 3.5],
        [-60, 3.5],
      ],
      centerline: [
        [200, 1.75],
        [-60, 1.75],
      ],
      speed_limit_mps: 15,
      incoming: [],
      outgoing: [],
    },
  ],
  intersections: [],
  carparks: [],
  drivable_areas: [],
};
const map = new DrivingMap(data);
const grid = SemanticGrid.fromMap(map);
const ego = { x: 0, y: -1.75, heading: 0 };
const lead: RenderBox = { x: 15, y: -1.75, heading: 0, length: 4.6, width: 1.9, height: 1.6, type: 'vehicle' };

describe('renderer', () => {
  it('rasterises the map semantically', () => {
    expect(grid.classAt(10, -1.75)).toBe(SEM.ROAD);
    expect(grid.classAt(10, 10)).toBe(SEM.OFFROAD);
    expect(grid.classAt(10, 3.55)).toBe(SEM.MARKING);
  });
  it('renders eight cameras with road below the horizon, sky above and the lead car ahead', () => {
    const rig = new CameraRig(navsimCameras(128, 72));
    const imgs = rig.render({ grid, ego, boxes: [lead] });
    expect(imgs).toHaveLength(8);
    const f = imgs[0] as Uint8Array;
    const px = (u: number, v: number) => Array.from(f.subarray((v * 128 + u) * 3, (v * 128 + u) * 3 + 3));
    expect(px(64, 2)[2]).toBeGreaterThan(150); // sky is blue
    const car = px(64, 44);
    expect(car[0]).toBeGreaterThan((car[1] as number) + 40); // red vehicle in the centre
    const road = px(64, 70);
    expect(Math.abs((road[0] as number) - (road[2] as number))).toBeLessThan(15); // grey road at the bottom
    // The back camera sees no car.
    const b = imgs[7] as Uint8Array;
    const bc = Array.from(b.subarray((44 * 128 + 64) * 3, (44 * 128 + 64) * 3 + 3));
    expect(bc[0]).toBeLessThan((bc[1] as number) + 40);
  });
  it('renders a BEV raster with the lead vehicle ahead of the ego', () => {
    const bev = renderBev({ grid, ego, boxes: [lead] }, { size: 64, resolution: 0.5 });
    expect(bev.shape).toEqual([64, 64, BEV_CHANNELS.length]);
    const at = (r: number, c: number, ch: number) => bev.data[(r * 64 + c) * BEV_CHANNELS.length + ch];
    expect(at(32 - 30, 32, 3)).toBe(255); // 15 m ahead -> 30 px up
    expect(at(32, 32, 0)).toBe(255);
    expect(at(32, 2, 0)).toBe(0); // 15 m left is off-road
  });
  it('casts LiDAR rays that hit the ground and the lead vehicle', () => {
    const { data: pts, n } = castLidar({ grid, ego, boxes: [lead] }, { channels: 16, azimuthSteps: 180 });
    expect(n).toBeGreaterThan(500);
    let hits = 0;
    for (let i = 0; i < n; i++) {
      const x = pts[i] as number,
        z = pts[2 * n + i] as number;
      if (x > 12 && x < 18 && z > 0.1) hits++;
    }
    expect(hits).toBeGreaterThan(3);
  });
});
