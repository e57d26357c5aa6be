/**
 * A scripted pick-and-lift policy for the tiny tabletop: it reads the block from the image (as the
 * world model does), its own pose from `state`, and plans each frame of the chunk on its predicted
 * pose: hover over the block with the gripper open, descend, close, lift. It needs no hidden
 * information, so its success shows that the world model's dynamics and reward mean what they say.
 *
 * @example
 * const chunk = scriptedChunk(obs.full_image.data, obs.state.data, 64, 8); // number[8][7]
 */
import { GRASP_TOL, PX_PER_M, REST_Z, POS_STEP, gridToMetres, integratePose, locateBlock } from './scene.ts';

const HOVER = 0.1;
const LIFT_TO = 0.3;

export function scriptedChunk(frame: Uint8Array, state: ArrayLike<number>, size: number, chunk: number): number[][] {
  const found = locateBlock(frame, size);
  let pose = Array.from(state).slice(0, 8);
  const out: number[][] = [];
  if (!found) {
    for (let t = 0; t < chunk; t++) out.push([0, 0, 0, 0, 0, 0, -1]);
    return out;
  }
  const block = gridToMetres(found);
  let held = found[2] > REST_Z + 0.5;
  const reach = (GRASP_TOL * 0.5) / PX_PER_M;
  const toward = (target: number, cur: number) => Math.max(-1, Math.min(1, (target - cur) / POS_STEP));
  for (let t = 0; t < chunk; t++) {
    const [x, y, z] = pose as [number, number, number];
    let a: number[];
    const overBlock = Math.abs(x - block[0]) < reach && Math.abs(y - block[1]) < reach;
    if (held) a = [toward(block[0], x), toward(block[1], y), toward(LIFT_TO, z), 0, 0, 0, 1];
    else if (!overBlock) a = [toward(block[0], x), toward(block[1], y), toward(Math.max(HOVER, z - 0.02), z), 0, 0, 0, -1];
    else if (Math.abs(z - block[2]) > reach) a = [toward(block[0], x), toward(block[1], y), toward(block[2], z), 0, 0, 0, -1];
    else {
      a = [0, 0, 0, 0, 0, 0, 1];
      held = true;
    }
    out.push(a);
    pose = integratePose(pose, a);
  }
  return out;
}
