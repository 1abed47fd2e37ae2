"""The GitHub workflow runs what ``.ci/run`` runs: ``dev.py test``, and the nox sessions
``dev.py matrix`` runs by default, each in a job on the session's own Python."""

from __future__ import annotations

import importlib.util
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


def test_ci_runs_the_setup_the_everything_command_and_the_nox_matrix() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for command in ("setup", "test --all", "matrix"):
        assert f"python3 dev.py {command}\n" in ci
    jobs = workflow()["jobs"]
    assert steps_run(jobs["test"]) == ["python3 dev.py setup", "python3 dev.py test --all"]
    assert 'python3 dev.py matrix -s "$SESSION"' in steps_run(jobs["matrix"])


def dev() -> Any:
    """dev.py, imported."""
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_setup_installs_every_tool_the_tests_need_and_the_workflow_s_packages() -> None:
    """`dev.py setup`'s Debian packages give every tool conftest looks for (the matrix job
    installs the same list)."""
    packages = dev().DEBIAN_PACKAGES
    tools = {tool for needed in packages.values() for tool in needed}
    expected = {"chromium", "xgettext", "msgmerge", "msgfmt", "redis-server", "redis-cli", "nginx"}
    assert tools == expected
    assert sorted(workflow()["env"]["DEBIAN_PACKAGES"].split()) == sorted(packages)


def collected(*args: str) -> set[str]:
    """The test ids pytest collects with ``args``, as in CI (nothing deselected for a missing
    tool)."""
    env = {**os.environ, "CI": "true", "REDIS_URL": "redis://127.0.0.1:6399/15"}
    output = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {line for line in output.splitlines() if "::" in line}


def test_the_quick_half_and_the_rest_are_every_test_once() -> None:
    """`dev.py test --all` runs the quick half, then the rest: together every test, none
    twice, and the rest holds the browser, load, fault and topology modules."""
    quick_half, everything_else = dev().QUICK, dev().EVERYTHING_ELSE
    quick = collected(*[arg for arg in quick_half if arg not in ("-n", "auto")])
    rest = collected(*everything_else)
    assert not quick & rest
    assert quick | rest == collected()
    modules = {test.split("::")[0] for test in rest}
    for module in ("browser", "load", "resilience", "sentinel", "cluster"):
        assert f"tests/test_{module}.py" in modules
    assert "tests/test_rooms.py::test_one_address_opening_100000_rooms[real]" in rest


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
