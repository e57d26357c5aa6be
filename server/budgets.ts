/**
 * Memory budgets for sessions: `make` reserves what the env declares it will hold (its registry
 * entry's `estimateBytes`) against a per-client and a server-wide budget before the env is built,
 * and the reservation is returned when the session closes. A make past either budget is refused
 * with ENV_ERR_MEMORY_BUDGET, so no client can make the server build what it cannot hold.
 *
 * @example
 * const budget = new MemoryBudget({ perClient: 8 * GiB, total: 16 * GiB });
 * budget.reserve('k_1', 's_1', 216 * MiB, 'gymwire/Bench2Drive-v0'); // throws when over
 * budget.release('s_1');
 */
import { ProtocolError } from '../protocol/errors.ts';

export interface MemoryBudgetLimits {
  /** Bytes one client's sessions may hold together; 0 disables the check. */
  perClient: number;
  /** Bytes every session on the server may hold together; 0 disables the check. */
  total: number;
}

const MIB = 1024 * 1024;
const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;

export class MemoryBudget {
  private readonly byClient = new Map<string, number>();
  private readonly bySession = new Map<string, { clientId: string; bytes: number }>();
  private totalBytes = 0;

  constructor(private readonly limits: MemoryBudgetLimits) {}

  /** Bytes reserved by one client's sessions, or by every session when no client is given. */
  used(clientId?: string): number {
    return clientId === undefined ? this.totalBytes : (this.byClient.get(clientId) ?? 0);
  }

  /** Reserves `bytes` for a session about to be made, or throws ENV_ERR_MEMORY_BUDGET (nothing reserved). */
  reserve(clientId: string, sessionId: string, bytes: number, envId: string): void {
    const clientUsed = this.used(clientId);
    const { perClient, total } = this.limits;
    const details = { env_id: envId, session_bytes: bytes };
    if (perClient > 0 && clientUsed + bytes > perClient) {
      throw new ProtocolError(
        'ENV_ERR_MEMORY_BUDGET',
        `a ${envId} session with these kwargs needs about ${mib(bytes)}, but this client's sessions already hold ${mib(clientUsed)} of its ${mib(perClient)} budget (max_memory_bytes_per_client); close sessions or ask for smaller ones (e.g. smaller cameras)`,
        { ...details, limit: 'max_memory_bytes_per_client', max: perClient, used: clientUsed },
      );
    }
    if (total > 0 && this.totalBytes + bytes > total) {
      throw new ProtocolError(
        'ENV_ERR_MEMORY_BUDGET',
        `a ${envId} session with these kwargs needs about ${mib(bytes)}, but the server's sessions already hold ${mib(this.totalBytes)} of its ${mib(total)} budget (max_memory_bytes)`,
        { ...details, limit: 'max_memory_bytes', max: total, used: this.totalBytes },
      );
    }
    this.bySession.set(sessionId, { clientId, bytes });
    this.byClient.set(clientId, clientUsed + bytes);
    this.totalBytes += bytes;
  }

  /** Returns a session's reservation (a no-op for one that holds none). */
  release(sessionId: string): void {
    const held = this.bySession.get(sessionId);
    if (!held) return;
    this.bySession.delete(sessionId);
    this.totalBytes -= held.bytes;
    const left = (this.byClient.get(held.clientId) ?? 0) - held.bytes;
    if (left > 0) this.byClient.set(held.clientId, left);
    else this.byClient.delete(held.clientId);
  }
}

/** What the resume-grace bound needs to know of a client that may have departed. */
export interface ReplyHolder {
  /** When the client's connection dropped; null while connected. */
  readonly detachedAt: number | null;
  /** Bytes its reply cache holds. */
  readonly replyBytes: number;
  /** Empties its reply cache: its retried requests are then refused with ENV_ERR_REPLY_EXPIRED, never run twice. */
  forgetAll(): void;
}

/**
 * Caps the bytes that departed clients' reply caches hold together, emptying the caches of those
 * that left first until the rest fit. Returns how many caches it emptied.
 */
export function boundDepartedReplies(clients: Iterable<ReplyHolder>, maxBytes: number): number {
  const departed = [...clients].filter((c) => c.detachedAt !== null && c.replyBytes > 0);
  let held = departed.reduce((sum, c) => sum + c.replyBytes, 0);
  if (held <= maxBytes) return 0;
  departed.sort((a, b) => a.detachedAt! - b.detachedAt!);
  let emptied = 0;
  for (const c of departed) {
    if (held <= maxBytes) break;
    held -= c.replyBytes;
    c.forgetAll();
    emptied++;
  }
  return emptied;
}
