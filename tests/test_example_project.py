"""The demo site the README sends newcomers to still starts and passes its checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MANAGE = Path(__file__).resolve().parent.parent / "example_project" / "manage.py"


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    return subprocess.run(
        [sys.executable, str(MANAGE), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_demo_settings_pass_every_check() -> None:
    result = manage("check", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr


def test_simulate_visitors_records_them_on_the_embedded_redis() -> None:
    result = manage("simulate_visitors", "--members", "3", "--guests", "2")
    assert result.returncode == 0, result.stderr
    assert "Recorded 3 member(s) and 2 guest(s)" in result.stdout
