"""The settings reference, generated from ``whos_online.settings_table`` so it cannot drift.

A page holding the line ``{settings-reference}`` (a MyST directive-like marker) gets it
replaced, when Sphinx reads the page, by a table of the settings and their defaults,
then, group by group (``GROUPS``), one section per setting: its name as a heading (so other
pages link to ``reference/core.md#whos_online_max_age``), its type, default and check (on
the same page), and its description; then the settings removed (``REMOVED``) and what
took their place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from whos_online.settings_table import GROUPS, REMOVED, SETTINGS, Setting

if TYPE_CHECKING:  # tests/test_docs.py imports this module without Sphinx
    from sphinx.application import Sphinx

MARKER = "```{settings-reference}\n```"


def section(setting: Setting) -> str:
    """One setting, in MyST Markdown."""
    check = f"[`{setting.check}`](#{setting.check.split('.')[1].lower()})"
    return (
        f"({setting.name.lower()})=\n"
        f"#### `{setting.name}`\n\n"
        f"**Type:** {setting.takes} · **Default:** `{setting.default!r}` · "
        f"**Checked by:** {check}\n\n"
        f"{setting.doc}\n"
    )


def reference() -> str:
    """A table of every setting and its default, then a section for each under its group's
    heading, then the removed settings."""
    by_name = {setting.name: setting for setting in SETTINGS}
    ordered = [by_name[name] for _, names in GROUPS for name in names]
    rows = [f"| [`{s.name}`](#{s.name.lower()}) | `{s.default!r}` |" for s in ordered]
    table = "\n".join(["| Setting | Default |", "|---|---|", *rows])
    groups = [
        "\n".join([f"### {title}\n", *(section(by_name[name]) for name in names)])
        for title, names in GROUPS
    ]
    removed = "\n".join(
        [
            "### Removed settings\n",
            "Still set, each is warning [`whos_online.W015`](#w015), which names what took "
            "its place:\n",
            *(f"- `{name}`: {instead}." for name, instead in REMOVED.items()),
        ]
    )
    return f"{table}\n\n" + "\n".join(groups) + "\n" + removed + "\n"


def replace_marker(app: Sphinx, docname: str, source: list[str]) -> None:
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, reference())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", replace_marker)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
