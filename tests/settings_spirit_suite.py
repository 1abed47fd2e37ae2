"""Spirit's own test settings with whos_online added as docs/tutorial.md says, for running
Spirit's own test suite (the tests it ships in its package) with whos_online installed:

    python -m django test --settings tests.settings_spirit_suite spirit

The nox session ``spirit`` runs it. Spirit's settings are its project template's
``settings/test.py``, the ones its runtests.py uses; the runner (tests/spirit_suite.py)
fails the run unless Spirit's tests ran and whos_online recorded their requests.
"""

import os
import tempfile

from spirit.extra.project_template.project_name.settings.test import *  # noqa: F403
from spirit.extra.project_template.project_name.settings.test import (
    CACHES,
    INSTALLED_APPS,
    LOGGING,
    MIDDLEWARE,
    TEMPLATES,
)

from tests.settings import CACHES as SUITE_CACHES

# What `spirit startproject test_project` gives Spirit's own runs: its project's URLconf,
# and media and a log file outside the installed package. Spirit's clean_media() deletes
# only a MEDIA_ROOT named "media_test". The runner deletes SCRATCH afterwards.
ROOT_URLCONF = "spirit.extra.project_template.project_name.urls"
SCRATCH = tempfile.mkdtemp(prefix="spirit-suite-")
MEDIA_ROOT = os.path.join(SCRATCH, "media_test")
STATIC_ROOT = os.path.join(SCRATCH, "static_test")
LOGGING["handlers"]["file"]["filename"] = os.path.join(SCRATCH, "django.log")

# whos_online, the tutorial's way: the app, the middleware, an alias of its own (the
# runner puts a redis-server of the run's own behind it: Spirit's tests clear every
# alias), the block in the base template all of Spirit's pages extend
# (tests/spirit_suite_templates), and its topic page a room by its URL name.
INSTALLED_APPS += ["whos_online"]
MIDDLEWARE += ["whos_online.middleware.WhosOnlineMiddleware"]
CACHES["whos_online"] = SUITE_CACHES["default"]  # fakeredis until the runner starts its server
WHOS_ONLINE_CACHE_ALIAS = "whos_online"
TEMPLATES[0]["DIRS"] = [os.path.join(os.path.dirname(__file__), "spirit_suite_templates")]
WHOS_ONLINE_ROOMS = {"spirit:topic:detail": "topic:{pk}"}

TEST_RUNNER = "tests.spirit_suite.SpiritSuiteRunner"
