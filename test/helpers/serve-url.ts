/**
 * The URL a spawned `gymwire serve` prints once it listens ("... on ws://host:port/..."), or a
 * rejection with its output if it exits first. One reader for every test that starts the real CLI.
 */
import type { ChildProcess } from 'node:child_process';

export function servedUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /on (ws:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`gymwire serve exited with ${code}: ${out}`)));
  });
}
