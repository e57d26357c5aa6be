// The `gymwire` command as one bundled file for machines without node_modules (the device check:
// scripts/device/prepare-carry.sh bundles it with esbuild).
import { main } from '../../bin/cli.ts';

await main(process.argv);
