"""The benchmarked Django site's settings (DJANGO_SETTINGS_MODULE of benchmarks/run.py).

Every case runs under these plus its own few overrides (its MIDDLEWARE, its key
prefix), so the site without whos_online and the site with it are the same app.
Redis keys live under ``whos_online_bench:<pid>:`` in REDIS_URL's database.
"""

import os
import tempfile
from pathlib import Path

from redis._parsers import Encoder
from redis.connection import PythonRespSerializer

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13")
PREFIX = f"whos_online_bench:{os.getpid()}"
# A file, not ":memory:": under ASGI each thread has its own connection.
DATABASE_FILE = Path(tempfile.gettempdir()) / f"whos_online_bench_{os.getpid()}.sqlite3"
SESSION_AND_AUTH = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]

DEBUG = False
SECRET_KEY = "whos-online-benchmark-not-a-secret"
ALLOWED_HOSTS = ["testserver"]
USE_TZ = True
ROOT_URLCONF = "benchsite"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "whos_online",
]
MIDDLEWARE = SESSION_AND_AUTH
# Persistent connections, as a site that cares about latency runs.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DATABASE_FILE),
        "CONN_MAX_AGE": None,
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
# The bench installs hiredis; the site uses redis-py's own reply parser and command
# packer anyway (redis-py packs with hiredis whenever it is installed, whatever the
# parser), as a site without the extra does. The rows marked "hiredis" use
# benchsite.hiredis_client.
PYTHON_PACKER = PythonRespSerializer(6000, Encoder("utf-8", "strict", False).encode)
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": PREFIX,
        "OPTIONS": {
            "PARSER_CLASS": "redis._parsers._RESP2Parser",
            "CONNECTION_POOL_KWARGS": {"command_packer": PYTHON_PACKER},
            # The shared machine's Redis sometimes stalls for a few hundred ms: longer than
            # the default 0.25 s, so whos_online does not fail open (and the run is not
            # refused) then.
            "SOCKET_TIMEOUT": 5,
        },
    }
}
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"libraries": {"baselines": "baselines"}},  # the baselines' blocks
    }
]
WHOS_ONLINE_KEY_PREFIX = PREFIX
# Two hours, so the populations stay online however long the run takes, and the
# "online" cookies the throttled cases send last an hour, half of it (with the default
# 300 s they expired mid-run, and those cases recorded); no cost measured here depends
# on either.
WHOS_ONLINE_MAX_AGE = 7200
