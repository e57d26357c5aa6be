/**
 * The link between the MCP tool layer and a gymwire core: anything that answers gymwire requests.
 *
 * Over HTTP the link is in-process ({@link coreLink}): a connection accepted by the core like any
 * WebSocket connection, speaking the real wire protocol through protocol/codec.ts, so the hello,
 * auth token, limits, validation and idle reaping are exactly those a WebSocket client gets. The
 * stdio bridge (`gymwire mcp`) uses a GymwireClient instead; it has the same `request` shape.
 *
 * @example
 * const link = await coreLink(core, { token: 'secret', clientName: 'mcp' });
 * const { envs } = await link.request('list_envs', {});
 * link.close();
 */
import { decode, encode } from '../../protocol/codec.ts';
import { ProtocolError } from '../../protocol/errors.ts';
import { Channel } from '../../runtime/channel.ts';
import type { ChannelLimits } from '../../runtime/channel.ts';
import { EventSchema, PROTOCOL_VERSION, ServerMessageSchema } from '../../protocol/messages.ts';
import type { RequestInput, RequestType, ResultOf, ServerEvent } from '../../protocol/messages.ts';
import type { ServerCore } from '../core.ts';

/** What the MCP tool layer needs from gymwire: one request at a time (or pipelined), typed by op. */
export interface GymwireLink {
  request<T extends RequestType>(type: T, fields: RequestInput<T>): Promise<ResultOf<T>>;
}

/** A link to a core in the same process, closed with `close()` (which detaches its sessions). */
export interface CoreLink extends GymwireLink {
  /** Server events (a session closed by the reaper, shutdown). */
  onEvent: ((event: ServerEvent) => void) | null;
  /** Called once when the connection closes, from either side (the server shutting down, say). */
  onClose: ((reason: string) => void) | null;
  readonly closed: boolean;
  close(): void;
}

/**
 * Requests one MCP session may have waiting on its link. The core's own per-session bound
 * (max_pending_per_session) still applies; this one bounds what a flood of tool calls holds in the
 * link before the core sees it. No deadline: the core's env calls carry their own.
 */
const MCP_LINK_LIMITS: Partial<ChannelLimits> = { maxInFlight: 256, maxQueued: 1024, deadlineMs: 0 };

/**
 * Opens an in-process connection to `core` and performs the hello handshake. Rejects with the
 * core's ProtocolError (ENV_ERR_UNAUTHORIZED for a missing or wrong token) when hello is refused.
 */
export async function coreLink(
  core: ServerCore,
  opts: { token?: string; clientName?: string; remoteAddress?: string; limits?: Partial<ChannelLimits> } = {},
): Promise<CoreLink> {
  let closed = false;
  const channel = new Channel<{ type: RequestType; fields: object }>({
    name: 'the gymwire core',
    send: (id, { type, fields }) => {
      const frame = encode({ ...fields, id, type });
      queueMicrotask(() => !closed && conn.onFrame(frame));
    },
    limits: { ...MCP_LINK_LIMITS, ...opts.limits },
    refusedError: ({ what, queued }) =>
      new ProtocolError('ENV_ERR_TOO_MANY_PENDING', `${queued} gymwire requests of this MCP session already wait; ${what} was not sent`, { queued }),
  });
  const shut = (reason: string) => {
    if (closed) return;
    closed = true;
    channel.fail(new ProtocolError('ENV_ERR_SHUTTING_DOWN', `the gymwire connection closed: ${reason}`));
    conn.onClose();
    link.onClose?.(reason);
  };
  const conn = core.accept({
    send: (frame) => {
      if (closed) return false;
      // No copy: every frame the core sends is a fresh encoding that nothing writes to afterwards.
      queueMicrotask(() => onFrame(frame));
      return true;
    },
    // Deferred: an error frame the core sent just before closing (a refused hello) is read first.
    close: (_code, reason) => queueMicrotask(() => shut(reason || 'closed by the server')),
    terminate: () => queueMicrotask(() => shut('terminated by the server')),
    remoteAddress: opts.remoteAddress ?? 'mcp',
  });

  const link: CoreLink = {
    onEvent: null,
    onClose: null,
    get closed() {
      return closed;
    },
    request<T extends RequestType>(type: T, fields: RequestInput<T>): Promise<ResultOf<T>> {
      if (closed) return Promise.reject(new ProtocolError('ENV_ERR_SHUTTING_DOWN', 'the gymwire connection is closed'));
      return channel.request<ResultOf<T>>({ type, fields }, { what: type });
    },
    close: () => shut('closed by the MCP session'),
  };

  function onFrame(frame: Uint8Array): void {
    if (closed) return;
    const parsed = ServerMessageSchema.safeParse(decode(frame));
    if (!parsed.success) return channel.noteGarbage();
    const msg = parsed.data;
    if (msg.type === 'event') {
      link.onEvent?.(EventSchema.parse(msg));
      return;
    }
    if (msg.type === 'error' && msg.id === null) {
      channel.rejectWaiting(ProtocolError.fromWire(msg.error));
      return;
    }
    channel.settle(msg.id as number, msg.type === 'error' ? { ok: false, error: ProtocolError.fromWire(msg.error) } : { ok: true, value: msg.result });
  }

  await link.request('hello', {
    protocol_version: PROTOCOL_VERSION,
    client_name: opts.clientName ?? 'gymwire-mcp',
    ...(opts.token !== undefined ? { token: opts.token } : {}),
  });
  return link;
}
