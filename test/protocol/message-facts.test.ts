import { describe, expect, it } from 'vitest';

import { REQUEST_SCHEMAS, REQUEST_TYPES, requestFacts } from '../../protocol/messages.ts';

describe('message facts', () => {
  it('every request declares whether it changes state and whether its answer is kept for a retry', () => {
    for (const type of REQUEST_TYPES) {
      const facts = REQUEST_SCHEMAS[type].facts;
      expect(typeof facts.changesState, type).toBe('boolean');
      expect(typeof facts.answerKept, type).toBe('boolean');
    }
  });

  it('a request that changes state has its answer kept, so a retry never runs it twice (the handshake alone is sent anew)', () => {
    for (const type of REQUEST_TYPES) {
      const { changesState, answerKept } = requestFacts(type);
      if (type === 'hello') expect(answerKept).toBe(false);
      else expect(answerKept, type).toBe(changesState);
    }
  });

  it('reads are not kept; state changes are', () => {
    const kept = REQUEST_TYPES.filter((t) => requestFacts(t).answerKept).sort();
    expect(kept).toEqual(['close', 'execute', 'make', 'reset', 'reset_batch', 'set_state', 'step', 'step_batch']);
  });
});
