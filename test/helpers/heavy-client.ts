/**
 * A client in its own process for the event-loop tests and benches: it makes a Bench2Drive camera
 * session on the server at argv[2] with the kwargs in argv[3] (JSON), resets and steps it, and
 * prints one line per finished phase (`made`, `reset`, `step`), so the process pinging the server
 * can tell which phase each slow ping fell in (the same run without cameras is the floor: what the
 * machine's load alone costs a ping). Decoding its 100 MB answers happens here, not in
 * the process that measures.
 */
import { connect } from '../../client/ts/client.ts';
import { Tensor } from '../../protocol/tensor.ts';

const [url, kwargsJson, stepsArg] = process.argv.slice(2);
const client = await connect(url!, { requestTimeoutMs: 300_000 });
const env = await client.make('gymwire/Bench2Drive-v0', JSON.parse(kwargsJson!) as Record<string, unknown>);
process.stdout.write('made\n');
const { obs } = await env.reset({ seed: 1 });
const rgb = (obs as { rgb?: Record<string, Tensor> }).rgb;
const shape = rgb ? Object.values(rgb)[0]!.shape : null;
process.stdout.write(`reset ${JSON.stringify(shape)}\n`);
for (let i = 0; i < Number(stepsArg ?? 0); i++) {
  await env.step(Tensor.from('float32', [3], [0.5, 0, 0]));
  process.stdout.write('step\n');
}
await env.close();
await client.close();
