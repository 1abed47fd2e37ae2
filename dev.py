#!/usr/bin/env python3
"""Developer entry point for whos_online: nothing to install beforehand but Python 3.10+.

    python3 dev.py setup                   apt-get what the tests need beyond Python, build .venv
    python3 dev.py test                    the quick half: fakeredis and a real Redis, in parallel
    python3 dev.py test --all [args...]    everything, as CI runs it (then load, browser, faults, topology)
    python3 dev.py test [pytest args...]   what the arguments select, in one process
    python3 dev.py demo [addrport]         migrate, seed and run the demo site
    python3 dev.py matrix [nox args...]    run nox: tests on every Python x Django, and mypy
    python3 dev.py docs                    build the docs (nox session docs) into docs/_build/html
    python3 dev.py bench [args...]         run the benchmark suite against REDIS_URL's server
    python3 dev.py mutate [module...]      mutation testing (mutation/mutate.py), fakeredis only
    python3 dev.py messages [-l LANG]      update the catalogs from the code, then compile them

Each command creates ``.venv`` next to this file when it is missing and installs what
it needs into it: the project and pyproject.toml's dependency groups (pip >= 25.1's
``--group``, so pip is upgraded first). A stamp file keyed on pyproject.toml's hash makes later runs skip
the install, so editing pyproject.toml triggers a reinstall. The tests' real Redis is
REDIS_URL's (e.g. ``redis://127.0.0.1:6379/15``) or, when it is unset, a redis-server of
their own on a spare loopback port (tests/on_redis_server.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
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
# The quick half: every test but those of the markers that start servers under load, drive
# a browser, break Redis under load or build topologies, or take minutes alone (pyproject.toml).
SLOW = ("load", "browser", "faults", "topology", "slow")
QUICK = ["-m", " and ".join(f"not {marker}" for marker in SLOW), "-n", "auto"]
EVERYTHING_ELSE = ["-m", " or ".join(SLOW)]  # one at a time: they measure throughput
# What the tests run beyond Python (tests/conftest.py's AVAILABLE), by Debian package.
DEBIAN_PACKAGES = {
    "chromium": ("chromium",),
    "gettext": ("xgettext", "msgmerge", "msgfmt"),
    "nginx-light": ("nginx",),
    "redis-server": ("redis-server",),
    "redis-tools": ("redis-cli",),
}


def setup() -> int:
    """apt-get install the Debian packages the tests need (those missing), then build .venv."""
    missing = [
        package
        for package, tools in DEBIAN_PACKAGES.items()
        if not all(shutil.which(tool) for tool in tools)
    ]
    if missing:
        if not shutil.which("apt-get"):
            sys.exit(
                f"dev.py: no apt-get here; install {', '.join(missing)} with your package manager"
            )
        sudo = [] if os.name != "posix" or os.geteuid() == 0 else ["sudo"]
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]
        print(f"dev.py: apt-get install {' '.join(missing)}", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update", "-qq"], install):
            if subprocess.run([*sudo, *command], env=env).returncode:
                sys.exit(f"dev.py: {' '.join(command)} failed")
    else:
        print(f"dev.py: {', '.join(DEBIAN_PACKAGES)} are installed")
    ensure_venv("test", *TEST_VENV)
    return 0


def on_a_real_redis(python: Path, pytest_args: list[str]) -> list[str]:
    """Arguments running pytest with a real Redis: REDIS_URL's, or else a redis-server of its
    own on a spare port, if one is installed (else its tests are deselected, as the header says)."""
    server = shutil.which("redis-server")
    if os.environ.get("REDIS_URL") or not server:
        return ["-m", "pytest", *pytest_args]
    return ["-m", "tests.on_redis_server", server, str(python), "-m", "pytest", *pytest_args]


def test(args: list[str]) -> int:
    """The quick half with no arguments; everything (the quick half, then the rest) with
    ``--all``; otherwise what the arguments select."""
    python = ensure_venv("test", *TEST_VENV)
    # tests/conftest.py's HALVES, in pytest's header (which -q hides).
    print("dev.py: pytest's header says which halves run (runs/OFF): fakeredis, the real")
    print("        Redis, the tests starting redis-servers of their own, browser")
    if "--all" not in args:
        if args:
            return run(python, on_a_real_redis(python, args))
        print("dev.py: the quick half; `python3 dev.py test --all` runs everything, as CI does")
        return run(python, on_a_real_redis(python, QUICK))
    args = [arg for arg in args if arg != "--all"]
    failed = [
        half
        for half in (QUICK, EVERYTHING_ELSE)
        if subprocess.run(
            [str(python), *on_a_real_redis(python, [*half, *args])], cwd=ROOT
        ).returncode
    ]
    for half in failed:
        print(f"dev.py: FAILED: pytest {' '.join(half)}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 10):
        sys.exit("dev.py needs Python 3.10 or newer")
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "setup":
        return setup()
    if command == "test":
        return test(args)
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
