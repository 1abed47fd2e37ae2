"""tests.settings with django-machina, a forum from PyPI, set up as its docs say:

    python -m pytest --ds tests.settings_forum tests/test_forum.py

Its topic pages are rooms through WHOS_ONLINE_ROOMS, its views left as they are.
The main run does that for you (tests/test_url_rooms.py runs it in a
subprocess): a process has one set of installed apps.
"""

from pathlib import Path

from machina import MACHINA_MAIN_STATIC_DIR, MACHINA_MAIN_TEMPLATE_DIR

from tests.settings import *  # noqa: F403
from tests.settings import CACHES, INSTALLED_APPS, MIDDLEWARE, TEMPLATES

INSTALLED_APPS = [
    *INSTALLED_APPS,
    "mptt",
    "haystack",
    "widget_tweaks",
    "machina",
    "machina.apps.forum",
    "machina.apps.forum_conversation",
    "machina.apps.forum_conversation.forum_attachments",
    "machina.apps.forum_conversation.forum_polls",
    "machina.apps.forum_feeds",
    "machina.apps.forum_moderation",
    "machina.apps.forum_search",
    "machina.apps.forum_tracking",
    "machina.apps.forum_member",
    "machina.apps.forum_permission",
]
MIDDLEWARE = [*MIDDLEWARE, "machina.apps.forum_permission.middleware.ForumPermissionMiddleware"]
ROOT_URLCONF = "tests.urls_forum"
LOGIN_URL = "/login/"
# The site's overrides (the blocks on the topic page and the index, the stylesheet in
# the head) first, then machina's own.
TEMPLATES = [
    {
        **TEMPLATES[0],
        "DIRS": [Path(__file__).parent / "forum_templates", MACHINA_MAIN_TEMPLATE_DIR],
        "OPTIONS": {
            "context_processors": [
                *TEMPLATES[0]["OPTIONS"]["context_processors"],
                "machina.core.context_processors.metadata",
            ]
        },
    },
    *TEMPLATES[1:],
]
# Its CSS, fonts and scripts, as its docs say (tests/test_forum_look.py serves them).
STATICFILES_DIRS = [MACHINA_MAIN_STATIC_DIR]
# Where machina keeps uploads between a preview and the post.
ATTACHMENTS_CACHE = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
CACHES = {**CACHES, "machina_attachments": ATTACHMENTS_CACHE}
HAYSTACK_CONNECTIONS = {"default": {"ENGINE": "haystack.backends.simple_backend.SimpleEngine"}}
# A private board: members read every forum, guests none (machina's own permissions).
MACHINA_DEFAULT_AUTHENTICATED_USER_FORUM_PERMISSIONS = [
    "can_see_forum",
    "can_read_forum",
    "can_start_new_topics",
    "can_reply_to_topics",
]
# machina's topic URL is forum/<forum_slug>-<forum_pk>/topic/<slug>-<pk>/.
WHOS_ONLINE_ROOMS = {"forum_conversation:topic": "topic:{pk}"}
