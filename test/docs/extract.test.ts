/**
 * The docs test's reading of a page: fenced blocks, the markers above them, and how blocks join
 * into programs (test/docs/blocks.ts).
 */
import { describe, expect, it } from 'vitest';

import { extractBlocks, programsOf } from './blocks.ts';

const page = [
  '# Page',
  '',
  '```python',
  'x = 1',
  '```',
  '',
  '<!-- docs-test: continues the block above -->',
  '```python',
  'print(x)',
  '```',
  '<!-- not run in CI: needs a GPU -->',
  '',
  '```sh',
  'nvidia-smi',
  '```',
  '<!-- not run in CI: it is slow -->',
  '```ts',
  'await slow();',
  '```',
  '```json',
  '{"a": 1}',
  '```',
  '- a list item with an indented block:',
  '  ```ts',
  '  const y = 2;',
  '  ```',
].join('\n');

describe('docs blocks', () => {
  const blocks = extractBlocks('docs/x.md', page);

  it('reads each block with its language, line and marker', () => {
    expect(blocks.map((b) => [b.lang, b.line])).toEqual([
      ['python', 3],
      ['python', 8],
      ['sh', 13],
      ['ts', 17],
      ['json', 20],
      ['ts', 24],
    ]);
    expect(blocks[1]!.continues).toBe(true);
    expect(blocks[2]!.notRun).toBe('needs a GPU');
    expect(blocks[5]!.code).toBe('const y = 2;\n');
  });

  it('refuses a reason that is not on the list', () => {
    expect(blocks[3]!.badMarker).toMatch(/unknown reason "it is slow"/);
  });

  it('joins continued blocks into one program and leaves out marked and data blocks', () => {
    expect(programsOf(blocks).map((p) => [p.lang, p.blocks.map((b) => b.line), p.code])).toEqual([
      ['python', [3, 8], 'x = 1\nprint(x)\n'],
      ['ts', [24], 'const y = 2;\n'],
    ]);
  });
});
