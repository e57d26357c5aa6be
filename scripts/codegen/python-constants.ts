/**
 * Renders the Python SDK's protocol constants (client/python/src/gymwire/_protocol.py) from the
 * TypeScript protocol, the single source of truth: versions, dtypes, the tensor extension type,
 * close codes, server event names, space tags, wire error codes with their fault and summary, the
 * SDK's local error codes, the adaptive busy-poll window (runtime/busy-poll.ts), the trajectory
 * dataset's format and version (client/ts/dataset/format.ts), and the waypoint controllers'
 * constants (runtime/waypoint-control.ts).
 * `npm run gen:python` writes the file; a test fails when the committed copy is stale.
 */
import { CLOSE_CODES, FATAL_CLOSE_CODES } from '../../protocol/close-codes.ts';
import { ERROR_CODES } from '../../protocol/errors.ts';
import { AUTORESET_MODES, PROTOCOL_VERSION, SERVER_EVENTS, SUPPORTED_PROTOCOL_VERSIONS } from '../../protocol/messages.ts';
import { SDK_ERROR_CODES } from '../../protocol/sdk-errors.ts';
import { SPACE_TYPES } from '../../protocol/spaces.ts';
import { DTYPES, TENSOR_EXT_TYPE } from '../../protocol/tensor.ts';
import { DATASET_FORMAT, DATASET_VERSION } from '../../client/ts/dataset/format.ts';
import { ADAPTIVE_DEFAULTS } from '../../runtime/busy-poll.ts';
import { WAYPOINT_CONTROLLERS } from '../../runtime/waypoint-control.ts';

const py = (value: unknown): string => JSON.stringify(value);
/** A Python tuple literal (a one-element tuple keeps its comma). */
const tuple = (values: readonly unknown[]): string => (values.length === 1 ? `(${py(values[0])},)` : `(${values.map(py).join(', ')})`);
/** A Python literal of plain data (numbers, strings, booleans, null, nested objects). */
const literal = (value: unknown): string => {
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${py(k)}: ${literal(v)}`)
      .join(', ')}}`;
  return py(value);
};
const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export function renderPythonConstants(): string {
  const lines: string[] = [
    '# Generated from the TypeScript protocol by `npm run gen:python` (scripts/codegen/python-constants.ts).',
    '# Do not edit: change protocol/*.ts and regenerate; a test fails when this file is stale.',
    '"""Protocol constants shared with the TypeScript server and SDK."""',
    '',
    'from __future__ import annotations',
    '',
    'from typing import Final',
    '',
    `PROTOCOL_VERSION: Final = ${PROTOCOL_VERSION}`,
    `SUPPORTED_PROTOCOL_VERSIONS: Final = ${tuple(SUPPORTED_PROTOCOL_VERSIONS)}`,
    '',
    "#: Wire dtype names in code order: a dtype's code is its index here.",
    `DTYPES: Final = ${tuple(DTYPES)}`,
    `TENSOR_EXT_TYPE: Final = ${TENSOR_EXT_TYPE}`,
    `AUTORESET_MODES: Final = ${tuple(AUTORESET_MODES)}`,
    '',
    '#: WebSocket close codes the server uses.',
    ...Object.entries(CLOSE_CODES).map(([name, code]) => `CLOSE_${name}: Final = ${code}`),
    `FATAL_CLOSE_CODES: Final = ${tuple(FATAL_CLOSE_CODES)}`,
    '',
    "#: The events a server sends unasked (``{type: 'event', event, ...}`` frames with no id).",
    ...SERVER_EVENTS.map((name) => `EVENT_${name.toUpperCase()}: Final = ${py(name)}`),
    '',
    "#: Every space tag (a wire space description's ``type``).",
    `SPACE_TYPES: Final = ${tuple(SPACE_TYPES)}`,
    '',
    '#: Every wire error code: who is at fault ("client", "server" or "env") and what it means.',
    'ERROR_CODES: Final[dict[str, tuple[str, str]]] = {',
    ...Object.entries(ERROR_CODES).map(([code, { fault, summary }]) => `    ${py(code)}: (${py(fault)}, ${py(summary)}),`),
    '}',
    '',
    "#: The SDKs' local error codes (never sent over the wire) and what each means.",
    'SDK_ERROR_CODES: Final[dict[str, str]] = {',
    ...Object.entries(SDK_ERROR_CODES).map(([code, summary]) => `    ${py(code)}: ${py(summary)},`),
    '}',
    '',
    '#: The adaptive busy-poll window both ends use (runtime/busy-poll.ts): times in µs, the rest counts and a fraction.',
    'BUSY_POLL_ADAPTIVE: Final[dict[str, float]] = {',
    ...Object.entries(ADAPTIVE_DEFAULTS).map(([key, value]) => `    ${py(snake(key))}: ${literal(value)},`),
    '}',
    '',
    '#: The trajectory dataset written and read by both SDKs (client/ts/dataset/format.ts).',
    `DATASET_FORMAT: Final = ${py(DATASET_FORMAT)}`,
    `DATASET_VERSION: Final = ${DATASET_VERSION}`,
    '',
    "#: The waypoint controllers by name (gymwire.control implements them): each reference's constants.",
    'WAYPOINT_CONTROLLERS: Final[dict[str, dict[str, object]]] = {',
    ...Object.entries(WAYPOINT_CONTROLLERS).flatMap(([name, config]) => [
      `    ${py(name)}: {`,
      ...Object.entries(config).map(([key, value]) => `        ${py(snake(key))}: ${literal(value)},`),
      '    },',
    ]),
    '}',
    '',
  ];
  return lines.join('\n');
}
