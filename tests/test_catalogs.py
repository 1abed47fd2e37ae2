"""The shipped catalogs are current: every marked string is in every catalog and
translated in every plural form, and every .mo is compiled from its .po.

The first check runs Django's makemessages (GNU gettext's xgettext) on a copy of
the package, so a string added, changed or removed without updating the
catalogs fails CI, naming the strings.
"""

from __future__ import annotations

import gettext
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest

import whos_online

LOCALE = Path(whos_online.__file__).parent / "locale"
# The languages that ship, with the number of plural forms each must fill.
PLURAL_FORMS = {
    "ar": 6,
    "de": 2,
    "es": 2,
    "fr": 2,
    "it": 2,
    "ja": 1,
    "ko": 1,
    "nl": 2,
    "pl": 3,
    "pt_BR": 2,
    "ru": 3,
    "tr": 2,
    "uk": 3,
    "zh_Hans": 1,
}

Key = tuple[str | None, str, str | None]


def catalog(language: str) -> polib.POFile:
    return polib.pofile(str(LOCALE / language / "LC_MESSAGES" / "django.po"))


def keys(entries: list[polib.POEntry]) -> set[Key]:
    """What identifies a message; occurrences (file:line) and dates do not count."""
    return {(entry.msgctxt, entry.msgid, entry.msgid_plural or None) for entry in entries}


def show(found: set[Key]) -> str:
    return "; ".join(sorted(repr(msgid) for _, msgid, _ in found))


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> set[Key]:
    """The strings makemessages finds in the package's code and templates now."""
    copy = tmp_path_factory.mktemp("messages") / "whos_online"
    package = Path(whos_online.__file__).parent
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("locale", "__pycache__"))
    (copy / "locale").mkdir()
    # No settings module: makemessages needs none inside an app, as docs/contributing.md runs it.
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    subprocess.run(
        [sys.executable, "-m", "django", "makemessages", "--locale", "en", "--keep-pot"],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
    )
    return keys(polib.pofile(str(copy / "locale" / "django.pot")))


def test_the_languages_that_ship() -> None:
    shipped = {path.parent.parent.name for path in LOCALE.glob("*/LC_MESSAGES/django.po")}
    assert shipped == set(PLURAL_FORMS)


@pytest.mark.parametrize("language", PLURAL_FORMS)
def test_catalog_has_every_marked_string_and_no_other(language: str, marked: set[Key]) -> None:
    shipped = keys([entry for entry in catalog(language) if not entry.obsolete])
    missing, obsolete = marked - shipped, shipped - marked
    assert not missing and not obsolete, (
        f"{language}: run makemessages and translate (see docs/contributing.md). "
        f"Missing: {show(missing) or 'none'}. Obsolete: {show(obsolete) or 'none'}."
    )


@pytest.mark.parametrize("language", PLURAL_FORMS)
def test_every_string_is_translated_in_every_plural_form(language: str) -> None:
    po = catalog(language)
    header = po.metadata["Plural-Forms"]
    assert f"nplurals={PLURAL_FORMS[language]};" in header.replace(" ", "")
    untranslated = [
        entry.msgid
        for entry in po
        if not entry.obsolete
        and (
            entry.fuzzy
            or (
                len(entry.msgstr_plural) != PLURAL_FORMS[language]
                or not all(entry.msgstr_plural.values())
                if entry.msgid_plural
                else not entry.msgstr
            )
        )
    ]
    assert not untranslated, f"{language}: fuzzy or untranslated: {untranslated}"


@pytest.mark.parametrize("language", PLURAL_FORMS)
def test_mo_is_compiled_from_its_po(language: str, tmp_path: Path) -> None:
    """msgfmt --check also rejects a translation whose %(name)s placeholders differ."""
    messages = LOCALE / language / "LC_MESSAGES"
    fresh = tmp_path / "django.mo"
    result = subprocess.run(
        ["msgfmt", "--check", "-o", str(fresh), str(messages / "django.po")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    with open(fresh, "rb") as compiled, open(messages / "django.mo", "rb") as shipped:
        assert gettext.GNUTranslations(shipped)._catalog == (  # type: ignore[attr-defined]
            gettext.GNUTranslations(compiled)._catalog  # type: ignore[attr-defined]
        ), f"{language}: django.mo is stale; run compilemessages (see docs/contributing.md)"
