"""The demo on an email-login custom user model (``accounts.EmailUser``).

    python example_project/manage.py demo --settings demo.settings_email

Everything else is the demo's. The member card is whos_online's default on
purpose, with only the demo's hidden members added: this is the site that would
list email addresses if the block showed login ids, and it shows what the
default does instead (short names, and "Member #<pk>" for members without one).
Log in as alice@example.com / demo.
"""

from __future__ import annotations

from django.urls import reverse

from demo.settings import *  # noqa: F403
from demo.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "accounts"]
AUTH_USER_MODEL = "accounts.EmailUser"

# The demo's card (initials avatars, staff colour) is for its own site; here the
# package default decides what the block shows.
WHOS_ONLINE_MEMBER_CARD = "demo.cards.default_card"

# No get_absolute_url on the model: this gives it one, which the default card
# uses as the profile link (the demo's profiles are by pk, so no address in a URL).
ABSOLUTE_URL_OVERRIDES = {"accounts.emailuser": lambda user: reverse("profile", args=[user.pk])}
