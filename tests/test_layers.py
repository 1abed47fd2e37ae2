"""The layers hold, and the core imports no optional part: import-linter's contracts in
``.importlinter``, run as CI runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_layer_imports_only_the_layers_below_it() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout
