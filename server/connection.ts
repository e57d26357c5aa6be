/**
 * One transport connection as the core sees it: frames in, answers out. A bug on the synchronous
 * path costs one answer, never the process; pooled answer memory is handed back once the socket
 * no longer reads it.
 */
import type { Logger } from 'pino';

import { encode, SplitFrame } from '../protocol/codec.ts';
import type { EncodedFrame } from '../protocol/codec.ts';
import { ProtocolError } from '../protocol/errors.ts';
import { frameRequestId } from '../protocol/frame-scan.ts';
import type { AdmissionPass } from './admission.ts';
import type { ClientState } from './client-state.ts';
import type { ServerCore } from './core.ts';
import { OutboundGate } from './outbound.ts';
import type { ConnectionHandler, TransportConnection } from './transport.ts';

/** One transport connection. */
export class Connection implements ConnectionHandler {
  client: ClientState | null = null;
  closed = false;
  /** Its place in the connection counts (null: not counted, as when it was refused). */
  admission: AdmissionPass | null = null;
  /** Bounds what waits to be written to this peer (server/outbound.ts). */
  private readonly outbound: OutboundGate;

  constructor(
    readonly id: string,
    readonly transport: TransportConnection,
    readonly log: Logger,
    private readonly core: ServerCore,
  ) {
    this.outbound = new OutboundGate(transport, core.outbound, {
      handle: (frame) => this.handle(frame),
      closed: () => this.closed,
      onSlowReader: (info) => {
        core.metrics.slowReaders.inc();
        this.log.warn(
          { buffered_bytes: info.bufferedBytes, max_outbound_bytes: info.maxBytes, outbound_drain_timeout_ms: info.drainTimeoutMs },
          'client did not read its answers in time; closing it (SLOW_READER)',
        );
      },
    });
  }

  onFrame(frame: Uint8Array): void {
    if (this.outbound.intercept(frame)) return;
    this.handle(frame);
    this.outbound.afterWrite();
  }

  /** Whether the server has stopped reading from this peer until it reads its answers. */
  get readingPaused(): boolean {
    return this.outbound.isPaused;
  }

  onDrain(): void {
    this.outbound.onDrain();
  }

  private handle(frame: Uint8Array): void {
    this.core.poller?.arrived();
    try {
      this.core.handleFrame(this, frame);
    } catch (err) {
      // A bug on the synchronous path must cost one answer, not the process (and every session on it).
      this.log.error({ err }, 'frame handling failed');
      this.sendError(
        frameRequestId(frame),
        new ProtocolError('ENV_ERR_INTERNAL', `the server failed to handle this frame: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
  }

  onClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.outbound.dispose();
    this.core.handleDisconnect(this);
  }

  send(bytes: EncodedFrame): void {
    if (this.closed) return;
    // Poll for the next request only when no env work is still running: with some in flight (a
    // world model's batch in its worker thread) the loop wakes for its result anyway, and spinning
    // would take time from a worker that shares this core.
    if (!this.core.working) this.core.poller?.touch();
    if (bytes instanceof SplitFrame) {
      // Parts reference the env's tensors: nothing to hand back once written. A transport that
      // cannot write parts (an in-process link) gets one buffer.
      if (this.transport.sendParts) this.transport.sendParts(bytes.parts);
      else this.transport.send(bytes.join());
    } else {
      const frames = this.core.frames;
      if (!frames.isPooled(bytes)) this.transport.send(bytes);
      else {
        frames.retain(bytes);
        this.transport.send(bytes, () => frames.release(bytes));
      }
    }
    this.outbound.afterWrite();
  }

  sendError(id: number | null, err: ProtocolError): void {
    this.send(encode({ id, type: 'error', error: err.toWire() }));
  }
}
