/**
 * In-memory transport for tests: a linked pair of endpoints, no sockets. Frames are delivered on
 * a later microtask so ordering and async behaviour match a real connection.
 */
import type { ServerCore } from '../core.ts';
import type { ListenOptions, ServerTransport } from '../transport.ts';

/** The client half, shaped like client/ts's ClientTransport (structurally; server code does not import the client). */
export interface MemoryClientEnd {
  send(frame: Uint8Array): void;
  close(): void;
  onmessage?: (frame: Uint8Array) => void;
  onclose?: (code: number, reason: string) => void;
  /** Frames go through this process's microtask queue: nothing for a client to poll. */
  readonly inProcess: true;
}

export class MemoryTransport implements ServerTransport {
  readonly name = 'memory';
  private core: ServerCore | null = null;
  private readonly open = new Set<() => void>();

  async listen(core: ServerCore, _opts?: ListenOptions): Promise<{ port: number }> {
    this.core = core;
    return { port: 0 };
  }

  /** Opens a new client connection to the core. */
  connect(): MemoryClientEnd {
    const core = this.core;
    if (!core) throw new Error('MemoryTransport.connect before listen');
    // `closed` stops new sends at once; `gone` is set on the same microtask queue as deliveries,
    // so frames sent before a close still arrive (like a WebSocket's close handshake).
    let closed = false;
    let gone = false;
    const client: MemoryClientEnd = {
      send: (frame) => {
        if (closed) return;
        const copy = frame.slice();
        queueMicrotask(() => !gone && conn.onFrame(copy));
      },
      close: () => shut(1000, 'client closed'),
      inProcess: true,
    };
    const shut = (code: number, reason: string) => {
      if (closed) return;
      closed = true;
      this.open.delete(drop);
      queueMicrotask(() => {
        gone = true;
        conn.onClose();
        client.onclose?.(code, reason);
      });
    };
    const drop = () => shut(1006, 'transport closed');
    this.open.add(drop);
    const conn = core.accept({
      send: (frame, onDone) => {
        if (closed) {
          onDone?.();
          return false;
        }
        const copy = frame.slice();
        onDone?.();
        queueMicrotask(() => !gone && client.onmessage?.(copy));
        return true;
      },
      close: (code = 1000, reason = '') => shut(code, reason),
      terminate: () => shut(1006, 'terminated'),
      remoteAddress: 'memory',
    });
    return client;
  }

  async close(): Promise<void> {
    for (const drop of [...this.open]) drop();
  }
}
