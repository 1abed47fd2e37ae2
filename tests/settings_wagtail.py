"""tests.settings with Wagtail, as ``wagtail start`` sets a site up, and
docs/howto/cms-pages.md's settings and home page template, word for word:

    python -m pytest --ds tests.settings_wagtail tests/test_wagtail.py

(``nox -s wagtail``, with the ``wagtail`` dependency group installed.)
"""

import re
from pathlib import Path

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS, TEMPLATES

HOWTO = (Path(__file__).resolve().parent.parent / "docs/howto/cms-pages.md").read_text()
(SETTINGS,) = re.findall(r"```python\n# settings.py\n(.*?)```", HOWTO, re.S)
(HOME_PAGE,) = re.findall(r"```django\n\{# home/templates/(home/home_page.html) #\}\n(.*?)```",
                          HOWTO, re.S)  # fmt: skip
INSTALLED_APPS = [
    "tests.wagtail_home",
    "wagtail.contrib.forms",
    "wagtail.contrib.redirects",
    "wagtail.sites",
    "wagtail.users",
    "wagtail.snippets",
    "wagtail.documents",
    "wagtail.images",
    "wagtail.search",
    "wagtail.admin",
    "wagtail",
    "modelcluster",
    "taggit",
    "django_filters",
    *INSTALLED_APPS,
    "django.contrib.staticfiles",
]
exec(SETTINGS)  # its app, WHOS_ONLINE_ROOMS and WHOS_ONLINE_ACCESS, as the how-to writes them
ROOT_URLCONF = "tests.urls_wagtail"
WAGTAIL_SITE_NAME = "Gardeners' Corner"
WAGTAILADMIN_BASE_URL = "http://testserver"
# The how-to's home page template first, then the starter's base.html (in tests/wagtail_home).
TEMPLATES = [
    {
        **TEMPLATES[0],
        "APP_DIRS": False,
        "OPTIONS": {
            **TEMPLATES[0]["OPTIONS"],
            "loaders": [
                ("django.template.loaders.locmem.Loader", {HOME_PAGE[0]: HOME_PAGE[1]}),
                "django.template.loaders.app_directories.Loader",
            ],
        },
    },
    *TEMPLATES[1:],
]
