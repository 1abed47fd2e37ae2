"""The GitHub workflow runs what ``.ci/run`` runs: ``dev.py test``, and the nox sessions
``dev.py matrix`` runs by default, each in a job on the session's own Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nox.project
import yaml

from tests.conftest import AVAILABLE

ROOT = Path(__file__).resolve().parent.parent


def workflow() -> dict[str, Any]:
    return yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())


def steps_run(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_ci_runs_the_test_command_and_the_nox_matrix() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 dev.py test\n" in ci and "python3 dev.py matrix\n" in ci
    jobs = workflow()["jobs"]
    assert "python3 dev.py test" in steps_run(jobs["test"])
    assert 'python3 dev.py matrix -s "$SESSION"' in steps_run(jobs["matrix"])


def test_the_workflow_matrix_is_the_sessions_nox_runs_by_default_each_on_its_python() -> None:
    """nox's own list (``nox --list --json``: the default sessions, parametrized) against the
    workflow's: a session added to the noxfile, or a pair to the matrix, fails here until the
    workflow runs it too."""
    listed = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    nox_sessions = sorted((s["session"], s["python"]) for s in json.loads(listed.stdout))
    job = workflow()["jobs"]["matrix"]
    cells = sorted(
        (cell["session"], cell["python"]) for cell in job["strategy"]["matrix"]["include"]
    )
    assert cells == nox_sessions
    assert len(nox_sessions) > 4  # the tests' pairs, mypy, lint, docs, package
    # Each job is the session's Python: nox finds no other interpreter there.
    assert job["container"] == "python:${{ matrix.python }}-bookworm"
    assert job["steps"][-1]["env"] == {"SESSION": "${{ matrix.session }}"}


def test_read_the_docs_installs_what_the_docs_session_installs() -> None:
    """The extras and dependency groups nox's docs session installs, and only ones pyproject
    defines: Read the Docs' build would otherwise lack Sphinx's theme or autodoc's imports."""
    config = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text())
    assert "python" not in config  # no extra_requirements naming a missing extra
    commands = config["build"]["jobs"]["post_install"]
    assert commands[-1] == 'python -m pip install ".[channels]" --group docs'
    noxfile = (ROOT / "noxfile.py").read_text()
    assert 'session.install(".[channels]", *group("docs"))' in noxfile
    pyproject = nox.project.load_toml(ROOT / "pyproject.toml")
    assert "channels" in pyproject["project"]["optional-dependencies"]
    assert "docs" in pyproject["dependency-groups"]


def header(**env: str) -> list[str]:
    """pytest's header for a run of ``tests/test_app.py`` with this environment (no CI, no
    REDIS_URL unless given)."""
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "REDIS_URL")}
    output = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "tests/test_app.py"],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return output.split("rootdir:")[0].splitlines()


def test_the_header_says_which_halves_run() -> None:
    """`dev.py test` without REDIS_URL still starts redis-servers of its own: the header says so."""
    own_servers = "redis-servers of their own on spare ports (the fault, resilience, Sentinel, "
    state = "runs" if AVAILABLE["redis-server"] else "OFF "
    without = header()
    assert "runs: fakeredis: every Redis test, in process" in without
    assert (
        "OFF : the real Redis at REDIS_URL (unset): every Redis test again, and the load and "
        "hostile-HTTP tests' app servers on it" in without
    )
    assert any(line.startswith(f"{state}: {own_servers}") for line in without)
    assert without[-1].startswith("not here, so deselected: REDIS_URL (set REDIS_URL")
    with_url = header(REDIS_URL="redis://127.0.0.1:6399/15")
    assert any(
        line.startswith("runs: the real Redis at REDIS_URL (redis://127.0.0.1:6399/15)")
        for line in with_url
    )
    assert "CI: the tests that need these fail: REDIS_URL" in header(CI="true")[-1]
