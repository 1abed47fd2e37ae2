"""Sphinx configuration: MyST Markdown pages, the Furo theme and autodoc of the Python API.

Build with ``python3 dev.py docs`` (warnings are errors, every reference must resolve).
"""

from __future__ import annotations

import sys
from pathlib import Path

import django
from django.conf import settings
from pygments.lexers.special import TextLexer
from sphinx.application import Sphinx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# autodoc imports whos_online, which reads Django's settings: the fewest that let it.
settings.configure(
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "whos_online"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    SECRET_KEY="docs",
    USE_TZ=True,
)
django.setup()

import whos_online  # noqa: E402

project = "whos_online"
author = "The whos_online developers"
copyright = "the whos_online developers"
release = version = whos_online.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # README-style links to a section: page.md#section-title

html_theme = "furo"
html_title = f"whos_online {release}"
html_static_path: list[str] = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
# Types from Django, redis-py and the standard library are named, not linked: the docs
# build offline (no intersphinx inventories to fetch).
nitpick_ignore_regex = [
    ("py:.*", r"(?!whos_online\.).*"),
    # Type variables, and the internal modules the public ones' docstrings point into.
    ("py:class", r"whos_online\..*\.(Key|T|P|ViewFunction)"),
    ("py:mod", r"whos_online\.(visitors\.guests|store\.counting|contrib\.channels\.hub)"),
]


def setup(app: Sphinx) -> None:
    app.add_lexer("cron", TextLexer)  # the tutorial's crontab line: shown uncoloured
