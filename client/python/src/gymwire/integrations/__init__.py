"""Integrations with AReaL, RLinf, verl and siiRL (docs/integrations.md).

Each submodule imports its framework lazily: it uses the framework's real base classes when the
framework is installed and otherwise a stand-in with the same signatures, so the adapters can be
built and tested on a machine without the framework's GPU stack.
"""
