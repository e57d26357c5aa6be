/**
 * Drawing values from space descriptions: what a random policy, the conformance fuzzer and
 * `RemoteEnv.sampleAction` run on either side of the wire. Sampling is not part of the contract, so it
 * lives here rather than in protocol/.
 *
 * @example
 * const action = sample(discrete(2), new Random(0)); // 0 or 1, the same for the same seed
 */
import { boundAt, stackTensors } from '../protocol/spaces.ts';
import type { BoxSpace, DiscreteSpace, Space } from '../protocol/spaces.ts';
import { isIntegerDType, shapeSize, Tensor } from '../protocol/tensor.ts';
import type { Random } from './random.ts';

/** Draws a value from a space (uniform where bounded, normal/exponential where not, like Gymnasium). */
export function sample(space: Space, rng: Random): unknown {
  switch (space.type) {
    case 'box': {
      const n = shapeSize(space.shape);
      const out = new Array<number>(n);
      for (let i = 0; i < n; i++) {
        const lo = boundAt(space.low, i);
        const hi = boundAt(space.high, i);
        let x: number;
        if (Number.isFinite(lo) && Number.isFinite(hi)) x = isIntegerDType(space.dtype) ? rng.integer(lo, hi + 1) : rng.uniform(lo, hi);
        else if (Number.isFinite(lo)) x = lo + -Math.log(1 - rng.random());
        else if (Number.isFinite(hi)) x = hi - -Math.log(1 - rng.random());
        else x = rng.normal();
        if (space.dtype === 'bool') x = Math.round(Math.min(1, Math.max(0, x)));
        else if (isIntegerDType(space.dtype)) x = Math.min(hi, Math.max(lo, Math.floor(x)));
        else if (space.dtype === 'float32') x = Math.min(hi, Math.max(lo, Math.fround(x)));
        out[i] = x;
      }
      return Tensor.from(space.dtype, space.shape, out);
    }
    case 'discrete':
      return space.start + rng.integer(0, space.n);
    case 'multi_discrete':
      return Tensor.from(
        space.dtype,
        space.nvec.shape,
        space.nvec.toNumbers().map((n, i) => space.start.at(i) + rng.integer(0, n)),
      );
    case 'multi_binary':
      return Tensor.from(
        'int8',
        space.n,
        Array.from({ length: shapeSize(space.n) }, () => rng.integer(0, 2)),
      );
    case 'text': {
      const chars = [...space.charset];
      const len = rng.integer(space.min_length, space.max_length + 1);
      return Array.from({ length: len }, () => chars[rng.integer(0, chars.length)]).join('');
    }
    case 'dict':
      return Object.fromEntries(Object.entries(space.spaces).map(([k, s]) => [k, sample(s, rng)]));
    case 'tuple':
      return space.spaces.map((s) => sample(s, rng));
    case 'sequence': {
      const len = rng.integer(0, 5);
      const items = Array.from({ length: len }, () => sample(space.space, rng));
      if (space.stack && space.space.type === 'box') return stackTensors(items as Tensor[], space.space.dtype, space.space.shape);
      return items;
    }
    case 'graph': {
      const numNodes = rng.integer(1, 6);
      const nodes = sampleStacked(space.node_space, numNodes, rng);
      if (space.edge_space === null) return { nodes, edges: null, edge_links: null };
      const numEdges = rng.integer(0, numNodes * 2);
      const edges = sampleStacked(space.edge_space, numEdges, rng);
      const links = Tensor.from(
        'int64',
        [numEdges, 2],
        Array.from({ length: numEdges * 2 }, () => rng.integer(0, numNodes)),
      );
      return { nodes, edges, edge_links: links };
    }
    case 'oneof': {
      const i = rng.integer(0, space.spaces.length);
      return [i, sample(space.spaces[i]!, rng)];
    }
  }
}

function sampleStacked(space: BoxSpace | DiscreteSpace, count: number, rng: Random): Tensor {
  if (space.type === 'discrete')
    return Tensor.from(
      space.dtype,
      [count],
      Array.from({ length: count }, () => sample(space, rng) as number),
    );
  return stackTensors(
    Array.from({ length: count }, () => sample(space, rng) as Tensor),
    space.dtype,
    space.shape,
  );
}
