# Generated from package.json by scripts/gen-version.mjs; do not edit.
__version__ = "0.1.0"
