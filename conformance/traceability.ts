/**
 * Traceability from the written promises to the cases that hold them: every normative statement
 * in docs/PROTOCOL.md and docs/errors.md carries an id (`[P-HELLO-3]`, `[E-BAD_FRAME-2]`), every
 * case names the ids it checks, and a statement no black-box case can check says here why and
 * which test of this repository holds it instead. test/conformance/traceability.test.ts fails on
 * an id without either, and on a case citing an id no page has; `npm run gen:conformance` prints
 * the matrix into docs/conformance.md.
 */
import type { ConformanceCase } from './harness.ts';

/** Statements `gymwire check` does not probe against an arbitrary server, each with why and where it is tested. */
export const OUTSIDE_THE_SUITE: Readonly<Record<string, string>> = {
  'P-WS-1': 'HTTP routing of the upgrade; test/server/hardening.test.ts',
  'P-WS-2': "needs the server's --allow-origin, --max-connections and per-IP settings; test/server/origin.test.ts, test/server/hardening.test.ts",
  'P-FRAME-4': 'a frame over twice max_frame_bytes; test/server/hardening.test.ts',
  'P-FRAME-7': 'the decoded-memory bound; test/server/hardening.test.ts, test/server/fuzz.test.ts',
  'P-FRAME-9': "WebSocket-level pings are below the suite's transport; test/server/transports.test.ts",
  'P-REQ-4': 'pipelining order across sessions; test/server/transports.test.ts',
  'P-TOOLS-3': "what an acting tool returns is each env's own (docs/envs/); test/envs/navsim/env.test.ts, test/mcp/http.test.ts",
  'P-SPACE-3': 'a bound sent as one value is read the same as a full one; test/protocol (space round trips)',
  'P-RESUME-4': 'the answer-memory caps need 1,024 answers or 16 MiB held; test/server/budgets.test.ts',
  'P-LIMIT-2': "needs the server's memory budgets; test/server/budgets.test.ts",
  'P-LIMIT-3': 'needs requests queued faster than an env steps; test/server/transports.test.ts',
  'P-LIMIT-6': "needs a client that stops reading past the server's outbound budget; test/server/slow-reader.test.ts",
  'P-HTTP-2': 'HTTP, not the protocol; test/server/episode-metrics.test.ts',
  'P-HTTP-3': 'HTTP, not the protocol; test/server/origin.test.ts',
  'E-CLIENT-1': 'a rule for clients, not servers; test/client/client.test.ts',
  'E-UNKNOWN_TYPE-1': 'details of an unknown type; test/server/transports.test.ts',
  'E-INVALID_MESSAGE-1': 'details of a reused or acked id; test/server/transports.test.ts',
  'E-REPLY_EXPIRED-1': 'details of an expired reply; test/server/budgets.test.ts, test/server/transports.test.ts',
  'E-MEMORY_BUDGET-1': "needs the server's memory budgets; test/server/budgets.test.ts",
  'E-ENV_FAILURE-1': 'needs an env that raises; test/server/transports.test.ts, test/server/fuzz.test.ts',
  'E-SHUTTING_DOWN-1': 'needs a server the suite may stop; test/client/shutdown.test.ts',
};

const ID = /\[([PE]-[A-Z_]+-\d+)\]/g;

/** The statement ids a page carries, in order of appearance (each once). */
export function statementIds(markdown: string): string[] {
  return [...new Set([...markdown.matchAll(ID)].map((m) => m[1]!))];
}

export interface Traceability {
  /** Ids on the pages that no case covers and OUTSIDE_THE_SUITE does not explain. */
  uncovered: string[];
  /** `case: id` for ids a case cites that no page carries. */
  unknown: string[];
  /** Cases that cite no id. */
  uncited: string[];
  /** Each id with the cases that cover it (empty for those outside the suite). */
  matrix: { id: string; cases: string[]; outside?: string }[];
}

export function trace(ids: string[], cases: readonly ConformanceCase[]): Traceability {
  const known = new Set(ids);
  const matrix = ids.map((id) => ({
    id,
    cases: cases.filter((c) => c.covers.includes(id)).map((c) => c.name),
    ...(OUTSIDE_THE_SUITE[id] ? { outside: OUTSIDE_THE_SUITE[id] } : {}),
  }));
  return {
    uncovered: matrix.filter((row) => !row.cases.length && !row.outside).map((row) => row.id),
    unknown: [
      ...cases.flatMap((c) => c.covers.filter((id) => !known.has(id)).map((id) => `${c.name}: ${id}`)),
      ...Object.keys(OUTSIDE_THE_SUITE).filter((id) => !known.has(id)),
    ],
    uncited: cases.filter((c) => !c.covers.length).map((c) => c.name),
    matrix,
  };
}

/** The matrix as docs/conformance.md prints it. */
export function renderMatrix(t: Traceability): string {
  const checked = t.matrix.filter((row) => row.cases.length).length;
  const lines = [
    `${t.matrix.length} statements carry an id: ${checked} are checked by \`gymwire check\`, ${t.matrix.length - checked} by tests of this repository that need what a black-box check cannot have (the reason is in the table).`,
    '',
    '| id | checked by |',
    '| --- | --- |',
    ...t.matrix.map((row) => `| ${row.id} | ${row.cases.length ? row.cases.join('; ') : `outside the suite: ${row.outside}`} |`),
  ];
  return lines.join('\n');
}
