/**
 * gymwire's own `--version` (`-V`) belongs before any subcommand. After one it is refused with a
 * message instead of printing the version and exiting 0: `gymwire eval navsim --version 2` once chose
 * the NAVSIM version, and a version string with exit 0 would pass for a finished run in a script.
 */
import type { Command } from 'commander';
import { Option } from 'commander';

/**
 * Makes `--version` (and `-V`) on `command` fail with `message`; the option is hidden from help.
 * Its value, if any, is taken so that `--version 2` is refused whole rather than as a stray argument.
 *
 * @example
 * refuseVersionFlag(navsim, 'eval navsim takes the NAVSIM version as --navsim-version 1|2');
 */
export function refuseVersionFlag(command: Command, message: string): void {
  command.addOption(new Option('-V, --version [value]').hideHelp());
  command.on('option:version', () => {
    throw new Error(message);
  });
}

/**
 * Parses the program's options only before its subcommand (commander reads them anywhere by default),
 * and refuses `--version` after every subcommand that has no refusal of its own yet. Call it once
 * every subcommand is registered.
 */
export function versionFlagBeforeSubcommandsOnly(program: Command): void {
  program.enablePositionalOptions();
  const walk = (command: Command, path: string): void => {
    for (const sub of command.commands) {
      const name = `${path} ${sub.name()}`;
      // Positional parsing is copied to subcommands when they are created; these were created first.
      sub.enablePositionalOptions();
      if (!sub.options.some((o) => o.long === '--version')) {
        refuseVersionFlag(sub, `'${name}' has no --version option ('${program.name()} --version', before any subcommand, prints the version)`);
      }
      walk(sub, name);
    }
  };
  walk(program, program.name());
}
