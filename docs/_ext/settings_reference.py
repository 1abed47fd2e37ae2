"""The settings reference, generated from ``whos_online.settings_table.SETTINGS`` so it cannot drift.

A page holding the line ``{settings-reference}`` (a MyST directive-like marker) gets it
replaced, when Sphinx reads the page, by a table of the settings and their defaults,
then, group by group (``GROUPS``), one section per setting: its name as a heading (so other pages link to
``reference/settings.md#whos_online_max_age``), its type, default and check, and its
description.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from whos_online.settings_table import GROUPS, SETTINGS, Setting

if TYPE_CHECKING:  # tests/test_docs.py imports this module without Sphinx
    from sphinx.application import Sphinx

MARKER = "```{settings-reference}\n```"


def section(setting: Setting) -> str:
    """One setting, in MyST Markdown."""
    check = f"[`{setting.check}`](checks.md#{setting.check.split('.')[1].lower()})"
    return (
        f"({setting.name.lower()})=\n"
        f"### `{setting.name}`\n\n"
        f"**Type:** {setting.takes} · **Default:** `{setting.default!r}` · "
        f"**Checked by:** {check}\n\n"
        f"{setting.doc}\n"
    )


def reference() -> str:
    """A table of every setting and its default, then a section for each under its group's
    heading."""
    by_name = {setting.name: setting for setting in SETTINGS}
    ordered = [by_name[name] for _, names in GROUPS for name in names]
    rows = [f"| [`{s.name}`](#{s.name.lower()}) | `{s.default!r}` |" for s in ordered]
    table = "\n".join(["| Setting | Default |", "|---|---|", *rows])
    groups = [
        "\n".join([f"## {title}\n", *(section(by_name[name]) for name in names)])
        for title, names in GROUPS
    ]
    return f"{table}\n\n" + "\n".join(groups)


def replace_marker(app: Sphinx, docname: str, source: list[str]) -> None:
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, reference())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", replace_marker)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
