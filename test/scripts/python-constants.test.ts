import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SdkErrorCode } from '../../client/ts/errors.ts';
import { renderPythonConstants } from '../../scripts/codegen/python-constants.ts';
import { SDK_ERROR_CODES } from '../../protocol/sdk-errors.ts';

const root = join(import.meta.dirname, '..', '..');

describe('constants shared with the Python SDK', () => {
  it('client/python/src/gymwire/_protocol.py is up to date with protocol/ (run npm run gen:python)', () => {
    const committed = readFileSync(join(root, 'client', 'python', 'src', 'gymwire', '_protocol.py'), 'utf8');
    expect(committed).toBe(renderPythonConstants());
  });

  it('the TypeScript SDK names exactly the local error codes of the shared table', () => {
    expect(new Set(Object.values(SdkErrorCode))).toEqual(new Set(Object.keys(SDK_ERROR_CODES)));
  });
});
