/**
 * gymwire's own --version counts only before a subcommand; after one it is refused with a message
 * (eval navsim names --navsim-version) instead of printing the version and exiting 0.
 */
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';

import { buildProgram } from '../../bin/cli.ts';
import { GYMWIRE_VERSION } from '../../protocol/version.ts';

async function parse(...args: string[]): Promise<{ out: string; error: unknown }> {
  const program = buildProgram().exitOverride();
  let out = '';
  program.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
  try {
    await program.parseAsync(['node', 'gymwire', ...args]);
    return { out, error: undefined };
  } catch (error) {
    return { out, error };
  }
}

describe('--version', () => {
  it('before any subcommand prints the version', async () => {
    for (const flag of ['--version', '-V']) {
      const { out, error } = await parse(flag);
      expect(error).toBeInstanceOf(CommanderError);
      expect((error as CommanderError).code).toBe('commander.version');
      expect(out.trim()).toBe(GYMWIRE_VERSION);
    }
  });

  it('after eval navsim points at --navsim-version, in every spelling, before a missing --agent is reported', async () => {
    for (const args of [
      ['eval', 'navsim', '--agent', 'human', '--version', '2'],
      ['eval', 'navsim', '--version=2', '--agent', 'human'],
      ['eval', 'navsim', '-V'],
      ['eval', 'navsim', '--version'],
    ]) {
      const { out, error } = await parse(...args);
      expect(error, args.join(' ')).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/eval navsim takes the NAVSIM version as --navsim-version 1\|2/);
      expect(out).not.toContain(GYMWIRE_VERSION);
    }
  });

  it('after any other subcommand is refused with where it belongs', async () => {
    for (const [args, command] of [
      [['serve', '--version'], 'gymwire serve'],
      [['envs', '-V'], 'gymwire envs'],
      [['eval', 'bench2drive', '--version', '2'], 'gymwire eval bench2drive'],
      [['eval', '--version', '2', 'navsim'], 'gymwire eval'],
    ] as const) {
      const { error } = await parse(...args);
      expect(error, args.join(' ')).toBeInstanceOf(Error);
      expect((error as Error).message).toBe(`'${command}' has no --version option ('gymwire --version', before any subcommand, prints the version)`);
    }
  });

  it('leaves --navsim-version to eval navsim and keeps the refusal out of help', async () => {
    const { error } = await parse('eval', 'navsim', '--agent', 'human', '--navsim-version', '3');
    expect((error as Error).message).toBe('--navsim-version must be 1 or 2, got 3');
    const program = buildProgram();
    const navsim = program.commands.find((c) => c.name() === 'eval')!.commands.find((c) => c.name() === 'navsim')!;
    expect(navsim.helpInformation()).toContain('--navsim-version');
    expect(navsim.helpInformation()).not.toMatch(/--version\b/);
    expect(program.helpInformation()).toContain('--version');
  });
});
