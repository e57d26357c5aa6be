/**
 * A client in its own process for the event-loop tests and benches: it makes a driving camera
 * session (Bench2Drive by default, or the env id in argv[5]) on the server at argv[2] with the
 * kwargs in argv[3] (JSON), resets and steps it argv[4] times (a NAVSIM episode is one step: it
 * resets between), and prints one line per finished phase (`made`, `reset`, `step`), so the
 * process pinging the server can tell which phase each slow ping fell in (the same run without
 * cameras is the floor: what the machine's load alone costs a ping). Decoding its 100 MB answers
 * happens here, not in the process that measures.
 */
import { connect } from '../../client/ts/client.ts';
import { Tensor } from '../../protocol/tensor.ts';

const [url, kwargsJson, stepsArg, envIdArg] = process.argv.slice(2);
const envId = envIdArg ?? 'gymwire/Bench2Drive-v0';
const navsim = envId.startsWith('gymwire/NavsimEnv');
const client = await connect(url!, { requestTimeoutMs: 300_000 });
const env = await client.make(envId, JSON.parse(kwargsJson!) as Record<string, unknown>);
process.stdout.write('made\n');
const { obs } = await env.reset({ seed: 1 });
const images = (obs as { rgb?: Record<string, Tensor>; cameras?: Record<string, Tensor> }).rgb ?? (obs as { cameras?: Record<string, Tensor> }).cameras;
const shape = images ? Object.values(images)[0]!.shape : null;
process.stdout.write(`reset ${JSON.stringify(shape)}\n`);
// NAVSIM: 8 poses 0.5 s apart, 2 m further each, straight ahead.
const action = navsim
  ? Tensor.from('float32', [8, 3], Array.from({ length: 8 }, (_, i) => [2 * (i + 1), 0, 0]).flat())
  : Tensor.from('float32', [3], [0.5, 0, 0]);
for (let i = 0; i < Number(stepsArg ?? 0); i++) {
  const r = await env.step(action);
  if (r.terminated || r.truncated) await env.reset();
  process.stdout.write('step\n');
}
await env.close();
await client.close();
