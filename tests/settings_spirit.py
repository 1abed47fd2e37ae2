"""tests.settings with Spirit (django-spirit), a forum from PyPI, set up as its project
template does, set private:

    python -m pytest --ds tests.settings_spirit tests/test_spirit.py

Spirit requires Django < 6, so only the nox session ``spirit`` installs and runs it
(Python 3.10, Django 4.2). Its private-forum middleware reads the ``spirit`` URL
namespace: WHOS_ONLINE_ROOMS maps its topic page without touching it.
"""

from tests.settings import *  # noqa: F403
from tests.settings import CACHES, INSTALLED_APPS, MIDDLEWARE

INSTALLED_APPS = [
    *INSTALLED_APPS,
    "django.contrib.humanize",
    "spirit.core",
    "spirit.admin",
    "spirit.search",
    "spirit.user",
    "spirit.user.admin",
    "spirit.user.auth",
    "spirit.category",
    "spirit.category.admin",
    "spirit.topic",
    "spirit.topic.admin",
    "spirit.topic.favorite",
    "spirit.topic.moderate",
    "spirit.topic.notification",
    "spirit.topic.private",
    "spirit.topic.unread",
    "spirit.comment",
    "spirit.comment.bookmark",
    "spirit.comment.flag",
    "spirit.comment.flag.admin",
    "spirit.comment.history",
    "spirit.comment.like",
    "spirit.comment.poll",
    "djconfig",
    "haystack",
]
MIDDLEWARE = [
    *MIDDLEWARE,
    "spirit.core.middleware.PrivateForumMiddleware",
    "djconfig.middleware.DjConfigMiddleware",
]
ROOT_URLCONF = "tests.urls_spirit"
LOGIN_URL = "spirit:user:auth:login"
ST_PRIVATE_FORUM = True
ST_SITE_URL = "http://testserver/"
CACHES = {
    **CACHES,
    "st_rate_limit": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
HAYSTACK_CONNECTIONS = {"default": {"ENGINE": "haystack.backends.simple_backend.SimpleEngine"}}
# Spirit's topic URL is topic/<pk>/<slug>/ (or topic/<pk>/).
WHOS_ONLINE_ROOMS = {"spirit:topic:detail": "topic:{pk}"}
