/** A client that reads its answers late, for the shutdown tests (in process and of `gymwire serve`). */
import WebSocket from 'ws';

import { decode, encode } from '../../protocol/codec.ts';
import { PROTOCOL_VERSION } from '../../protocol/messages.ts';

/**
 * Speaks the protocol over a bare WebSocket: sends 12 pings with 2 MiB payloads, stops reading
 * before their answers arrive, calls `shutDown`, and reads again a moment later. Returns the ids
 * answered, the events seen and the close code.
 */
export async function slowReaderThroughShutdown(
  url: string,
  shutDown: () => void,
): Promise<{ sent: number[]; answered: number[]; events: string[]; closeCode: number }> {
  const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1 << 30 });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const answered: number[] = [];
  const events: string[] = [];
  let welcomed: () => void = () => {};
  const welcome = new Promise<void>((r) => (welcomed = r));
  ws.on('message', (data: Buffer) => {
    const msg = decode(data) as { id: number | null; type: string; event?: string; result?: { payload?: Uint8Array } };
    if (msg.type === 'event') events.push(msg.event!);
    else if (msg.id === 1) welcomed();
    else if (msg.type === 'result' && msg.result?.payload?.byteLength === 2 << 20) answered.push(msg.id!);
  });
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  ws.send(encode({ id: 1, type: 'hello', protocol_version: PROTOCOL_VERSION }));
  await welcome;
  const sent = Array.from({ length: 12 }, (_, i) => i + 2);
  ws.pause();
  for (const id of sent) ws.send(encode({ id, type: 'ping', payload: new Uint8Array(2 << 20).fill(id) }));
  // The pings are answered as they arrive; their answers pile up behind the paused reader.
  await new Promise((r) => setTimeout(r, 1500));
  shutDown();
  await new Promise((r) => setTimeout(r, 300));
  ws.resume();
  const closeCode = await closed;
  return { sent, answered, events, closeCode };
}
