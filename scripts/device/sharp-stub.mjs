// Stands in for sharp in the device bundle (scripts/device/prepare-carry.sh): the world-model
// benchmark never encodes images, and sharp's native library is not carried.
export default function sharp() {
  throw new Error('sharp is not carried to this machine (scripts/device/prepare-carry.sh bundles the server without it)');
}
