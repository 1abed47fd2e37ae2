"""The site tests/test_load.py serves with gunicorn and uvicorn.

Everything that differs per run comes from the environment, set by the test:
LOAD_SITE_DB (an SQLite file in a temp dir), REDIS_URL (the real, shared
Redis) and LOAD_SITE_KEY_PREFIX (a key prefix of the run's own).
"""

import os

SECRET_KEY = "whos-online-load-site"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
# tests/test_server_sent_events.py serves docs/howto/server-sent-events.md's view instead.
ROOT_URLCONF = os.environ.get("LOAD_SITE_URLCONF", "tests.load_site.urls")
WSGI_APPLICATION = "tests.load_site.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["LOAD_SITE_DB"],
        # Two worker processes write last_login at once; the file is in WAL mode.
        "OPTIONS": {"timeout": 30},
    }
}

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "whos_online",
    "whos_online.contrib.channels",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "whos_online.middleware.WhosOnlineMiddleware",
]
# Sessions in signed cookies: no session table for two processes to fight over.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.contrib.auth.context_processors.auth"]},
    }
]
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": os.environ["REDIS_URL"],
        # Under load on a shared 2-core machine a Redis reply can take longer than the
        # default 0.25 s; a timeout here would (correctly) skip the visit and fail the
        # test. Likewise calls can pass the default 0.1 s slow-call budget (0.4 × the
        # timeout), and enough of them open the breaker: a visitor then gets no cookie on
        # their first page, as designed, and the exact count fails; 2 s makes the budget
        # 0.8 s. tests/test_resilience.py runs the site with whos_online's defaults.
        "OPTIONS": {"SOCKET_TIMEOUT": float(os.environ.get("LOAD_SITE_SOCKET_TIMEOUT", 2))},
    }
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

WHOS_ONLINE_KEY_PREFIX = os.environ["LOAD_SITE_KEY_PREFIX"]
# One trusted proxy in front: each simulated visitor's address arrives as the
# last X-Forwarded-For entry, as a reverse proxy would append it.
# tests/test_hostile_http.py also serves it with the RFC 7239 header.
WHOS_ONLINE_PROXIES = {os.environ.get("LOAD_SITE_PROXY_HEADER", "X-Forwarded-For"): 1}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # The worker's pid on each line: the fault tests count records per process.
    "formatters": {"pid": {"format": "%(process)d %(levelname)s %(name)s %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "pid"}},
    "loggers": {"whos_online": {"handlers": ["stderr"], "level": "WARNING"}},
}

# Every room is public: members join, guests see (whos_online.access).
WHOS_ONLINE_ACCESS = "whos_online.access.public"

# tests/test_realtime_load.py (ws_asgi.py): the site's live blocks subscribe by WebSocket,
# so its records publish their notices.
WHOS_ONLINE_WEBSOCKET_URL = os.environ.get("LOAD_SITE_WEBSOCKET_URL")

# tests/test_realtime_load.py: beats every LOAD_SITE_HEARTBEAT seconds.
WHOS_ONLINE_HEARTBEAT = float(os.environ.get("LOAD_SITE_HEARTBEAT", 25))
# A window short enough that a socket closes past its member's cookie (half of it).
WHOS_ONLINE_MAX_AGE = int(os.environ.get("LOAD_SITE_MAX_AGE", 600))
