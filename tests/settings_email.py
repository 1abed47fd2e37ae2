"""tests.settings on an email-login custom user model: the example project's accounts.EmailUser.

    python -m pytest --ds tests.settings_email tests/test_email_login.py

The main run does that for you (tests/test_example_project.py runs it in a
subprocess): a process has one user model.
"""

import sys
from pathlib import Path

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

# The accounts app lives in the example project, as tests/test_example_project.py finds it.
EXAMPLE_PROJECT = str(Path(__file__).resolve().parent.parent / "example_project")
if EXAMPLE_PROJECT not in sys.path:
    sys.path.insert(0, EXAMPLE_PROJECT)

INSTALLED_APPS = [*INSTALLED_APPS, "accounts"]
AUTH_USER_MODEL = "accounts.EmailUser"
# WHOS_ONLINE_MEMBER_CARD is left unset: the default card is what is under test.
# A profile page per member, by pk (no address in a URL): the default card links it.
ABSOLUTE_URL_OVERRIDES = {"accounts.emailuser": lambda user: f"/people/{user.pk}/"}
