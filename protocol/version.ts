// Generated from package.json by scripts/gen-version.mjs; do not edit.
export const GYMWIRE_VERSION = '0.1.0';
