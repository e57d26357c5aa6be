/**
 * Where a client command talks to: the server at --url, or one started in this process for the run.
 */
import { connect } from '../../client/ts/client.ts';
import type { GymwireClient } from '../../client/ts/client.ts';
import { startServer } from '../../server/index.ts';

export interface Target {
  client: GymwireClient;
  /** Closes the client, then the local server if one was started. */
  close(): Promise<void>;
}

export async function connectToTarget(url: string | undefined, token: string | undefined): Promise<Target> {
  const server = url ? null : await startServer({ port: 0 });
  const client = await connect(url ?? server!.url, { token: token ?? process.env.GYMWIRE_TOKEN });
  return {
    client,
    async close() {
      await client.close();
      await server?.close();
    },
  };
}
