"""Settings for the whos_online demo: one local process, SQLite, and a real or embedded Redis.

Not for production: the secret key is public and DEBUG is on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = "whos-online-demo-only-not-secret"
DEBUG = True
ALLOWED_HOSTS: list[str] = []  # with DEBUG on, Django allows localhost, 127.0.0.1 and [::1]

INSTALLED_APPS = [
    "daphne",  # runserver serves the ASGI application: HTTP and the live blocks' WebSockets
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Before whos_online: its templates/whos_online/members.html overrides the
    # package's, to add a class per role (coloured staff names).
    "demo",
    "whos_online",
    "whos_online.contrib.admin",  # the "Online now" page in the admin
    "whos_online.contrib.channels",  # the live blocks' WebSockets
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # After AuthenticationMiddleware: it needs request.user to tell members from guests.
    "whos_online.middleware.WhosOnlineMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "demo.urls"
ASGI_APPLICATION = "demo.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "demo.context_processors.demo",
            ],
        },
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        # DEMO_DATABASE lets a test run the demo on a database of its own.
        "NAME": os.environ.get("DEMO_DATABASE", BASE_DIR / "db.sqlite3"),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"

LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# whos_online reaches Redis through this django-redis cache alias ("default").
# A key prefix of its own (DEMO_KEY_PREFIX) keeps a test's demo apart on a shared Redis.
WHOS_ONLINE_KEY_PREFIX = os.environ.get("DEMO_KEY_PREFIX", "whos_online")
REDIS_URL = os.environ.get("REDIS_URL", "")
CACHES: dict[str, dict[str, Any]]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            # whos_online's socket timeout too. A test on a busy machine allows a slower
            # Redis than a site should (the default is 0.25 s).
            "OPTIONS": {"SOCKET_TIMEOUT": float(os.environ.get("DEMO_SOCKET_TIMEOUT", 0.25))},
        }
    }
else:
    # No Redis server needed: fakeredis emulates one. Its data lives in the memory of
    # the process that uses it, so every process gets its own empty "server". That is
    # why `manage.py demo` seeds visitors and then runs the web server in one process,
    # and why runserver's auto-reloader (a second process) is off there.
    import fakeredis

    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://demo-fakeredis:6379/0",
            "OPTIONS": {
                "CONNECTION_POOL_KWARGS": {"connection_class": fakeredis.FakeRedisConnection}
            },
        }
    }

# The demo's Redis database holds nothing but whos_online's keys, so no other
# cache.clear() can erase them: W010 (whos_online on the "default" cache) does not apply.
SILENCED_SYSTEM_CHECKS = ["whos_online.W010"]

# WebSocket presence: live blocks subscribe here (demo/asgi.py routes it). Several
# server processes share a channel layer through Redis; the embedded default is one process.
WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
# Which rooms exist over WebSockets, and for whom (without it, none do).
WHOS_ONLINE_ACCESS = "demo.access.room_access"
CHANNEL_LAYERS = {
    "default": (
        {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # socket_timeout=None: redis-py 8 reads with a 5 s timeout by default, which
            # ends channels-redis's 5 s blocking receive on an idle socket with an error
            # that closes the consumer (its socket reconnects, its member flickers idle).
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                "prefix": f"{WHOS_ONLINE_KEY_PREFIX}:asgi",
            },
        }
        if REDIS_URL
        else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    )
}
# DEMO_HEARTBEAT lets a test kill the server and see its sockets expire quickly (a
# connection is gone after 2.4 heartbeats).
WHOS_ONLINE_HEARTBEAT = float(os.environ.get("DEMO_HEARTBEAT", 25))

# A 10-minute window: each visitor is re-recorded at most once per 5 minutes.
# DEMO_MAX_AGE lets a test close a tab past its member's cookie (half of it) in seconds.
WHOS_ONLINE_MAX_AGE = int(os.environ.get("DEMO_MAX_AGE", 600))
# Profiles say "last seen 3 days ago": keep last-seen times for a week (at a day or
# more the block also says how many were online in the past 24 hours).
WHOS_ONLINE_RETENTION = 7 * 24 * 3600
# Each member's card: display name, profile link, initials avatar, a role, and whether
# they prefer not to be listed.
WHOS_ONLINE_MEMBER_CARD = "demo.cards.member_card"
# The avatars and the icon a page loads are no visits: a member's page stays the page.
WHOS_ONLINE_EXCLUDE_PATHS = [r"/avatars/", r"/favicon\."]

# runserver serves whos_online/live.js (the live block's script) from here.
STATIC_URL = "/static/"
