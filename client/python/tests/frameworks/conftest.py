"""Framework tests run only from scripts/test-frameworks.sh, each in the venv that holds its framework.

That script sets ``GYMWIRE_FRAMEWORK`` to the framework whose venv runs pytest; outside it these
files are not collected at all (the SDK's own venv has none of the frameworks), so a missing
framework is an import error in its own run, never a silent skip. The live server fixture (``url``)
comes from the parent conftest.
"""

from __future__ import annotations

import os

_framework = os.environ.get("GYMWIRE_FRAMEWORK")
collect_ignore_glob = ["test_*.py", "*_app/*"] if not _framework else [f for f in ("test_rlinf.py", "test_verl.py", "test_areal.py", "test_siirl.py") if f != f"test_{_framework}.py"] + ["*_app/*"]
