// npm's `prepare` step in a checkout: links node_modules/.bin/gymwire to bin/gymwire.js, which runs
// the TypeScript sources through tsx, so `npx gymwire ...` works right after `npm install` with no
// build. npm runs `prepare` only in a checkout (and for git dependencies), never for a package
// installed from a registry or a tarball, whose `gymwire` command is the compiled dist/bin/main.js.
import { chmodSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const binDir = join(root, 'node_modules', '.bin');
const target = join(root, 'bin', 'gymwire.js');
const link = join(binDir, 'gymwire');
mkdirSync(binDir, { recursive: true });
rmSync(link, { force: true });
symlinkSync(relative(binDir, target), link);
chmodSync(target, 0o755);
