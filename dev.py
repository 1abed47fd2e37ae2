#!/usr/bin/env python3
"""Developer entry point for whos_online: nothing to install beforehand but Python 3.10+.

    python3 dev.py test [pytest args...]   run the test suite
    python3 dev.py demo [addrport]         migrate, seed and run the demo site
    python3 dev.py matrix [nox args...]    run nox: tests on every Python x Django, and mypy
    python3 dev.py docs                    build the docs (nox session docs) into docs/_build/html
    python3 dev.py bench [args...]         run the benchmark suite against REDIS_URL's server
    python3 dev.py mutate [module...]      mutation testing (mutation/mutate.py), fakeredis only
    python3 dev.py messages [-l LANG]      update the catalogs from the code, then compile them

Each command creates ``.venv`` next to this file when it is missing and installs what
it needs into it: the project and pyproject.toml's dependency groups (pip >= 25.1's
``--group``, so pip is upgraded first). A stamp file keyed on pyproject.toml's hash makes later runs skip
the install, so editing pyproject.toml triggers a reinstall. Setting REDIS_URL (e.g.
``redis://127.0.0.1:6379/15``) adds a run of the Redis tests against a real server.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
USAGE = (__doc__ or "").split("\n\n")[1:2]


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(name: str, *requirements: str) -> Path:
    """Create .venv if needed and install requirements unless this exact set is stamped."""
    python = venv_python()
    if not python.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    key = (ROOT / "pyproject.toml").read_bytes() + "\n".join(requirements).encode()
    stamp = VENV / f".whos_online-{name}-{hashlib.sha256(key).hexdigest()[:16]}"
    if not stamp.exists():
        print(f"dev.py: installing {' '.join(requirements)} into .venv", flush=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        if (
            subprocess.run([*pip, "pip>=25.1"], cwd=ROOT).returncode
            or subprocess.run([*pip, *requirements], cwd=ROOT).returncode
        ):
            sys.exit(f"dev.py: installing {' '.join(requirements)} failed (see pip's output)")
        for old in VENV.glob(f".whos_online-{name}-*"):
            old.unlink()
        stamp.touch()
    return python


def run(python: Path, args: list[str], env: dict[str, str] | None = None) -> int:
    """Run python with args from the repo root; on POSIX replace this process (clean Ctrl-C)."""
    command = [str(python), *args]
    sys.stdout.flush()
    if os.name == "posix":
        os.chdir(ROOT)
        os.execve(command[0], command, env if env is not None else os.environ)
    return subprocess.run(command, cwd=ROOT, env=env).returncode


def pyenv_bin_dirs() -> list[str]:
    """bin dirs of the CPython versions pyenv installed, newest first (its shims need PYENV_VERSION)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))

    found = [p for p in versions.glob("[0-9]*/bin") if re.fullmatch(r"[\d.]+", p.parent.name)]
    return [str(p) for p in sorted(found, key=version, reverse=True)]


def groups(*names: str) -> list[str]:
    """pip arguments installing pyproject.toml's dependency groups ``names``."""
    return [arg for name in names for arg in ("--group", name)]


# The suite's .venv (`test`, `mutate`): the load and browser tests run there too.
TEST_VENV = ("-e", ".[channels]", *groups("test", "load", "browser"))


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 10):
        sys.exit("dev.py needs Python 3.10 or newer")
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "test":
        python = ensure_venv("test", *TEST_VENV)
        # tests/conftest.py's HALVES, in pytest's header (which -q hides).
        print("dev.py: pytest's header says which halves run (runs/OFF): fakeredis, the real")
        print("        Redis at REDIS_URL, the tests starting redis-servers of their own, browser")
        return run(python, ["-m", "pytest", *args])
    if command == "demo":
        python = ensure_venv("demo", "-e", ".[channels]", *groups("demo"))
        return run(python, [str(Path("example_project", "manage.py")), "demo", *args])
    if command == "bench":
        python = ensure_venv("bench", "-e", ".[channels,hiredis]", *groups("test", "load", "bench"))
        return run(python, [str(Path("benchmarks", "run.py")), *args])
    if command == "mutate":
        python = ensure_venv("test", *TEST_VENV)
        return run(python, [str(Path("mutation", "mutate.py")), *args])
    if command == "messages":
        python = ensure_venv("demo", "-e", ".[channels]", *groups("demo"))
        # From inside the app, with no settings module: makemessages needs none there.
        env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
        for task in (["makemessages", *(args or ["--all"])], ["compilemessages"]):
            command_line = [str(python), "-m", "django", *task]
            if subprocess.run(command_line, cwd=ROOT / "whos_online", env=env).returncode:
                return 1
        return 0
    if command in ("matrix", "docs"):
        python = ensure_venv("matrix", *groups("nox"))
        path = os.pathsep.join([*pyenv_bin_dirs(), os.environ.get("PATH", "")])
        nox_args = ["-s", "docs", *args] if command == "docs" else args
        return run(python, ["-m", "nox", *nox_args], env={**os.environ, "PATH": path})
    print("usage:", *USAGE, file=sys.stderr, sep="\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
