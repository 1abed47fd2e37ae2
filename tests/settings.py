"""Settings for the test suite; conftest.py points CACHES at fakeredis or a real Redis."""

from pathlib import Path

from tests.counted import CountedFakeConnection

SECRET_KEY = "whos-online-tests"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
USE_TZ = True
ROOT_URLCONF = "tests.urls"
STATIC_URL = "/static/"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.messages",
    "django.contrib.sessions",
    "whos_online",
    "whos_online.contrib.admin",
    "whos_online.contrib.channels",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "whos_online.middleware.WhosOnlineMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
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
            ]
        },
    },
    {
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [Path(__file__).parent / "jinja2"],
        "OPTIONS": {"extensions": ["whos_online.contrib.jinja2.WhosOnlineExtension"]},
    },
]
CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": "redis://fakeredis-tests:6379/0",
        "OPTIONS": {
            "CONNECTION_POOL_KWARGS": {"connection_class": CountedFakeConnection},
            "SOCKET_TIMEOUT": 2,  # as tests/conftest.py's caches: SUITE_SOCKET_TIMEOUT
        },
    }
}
# The suite keeps whos_online on "default" and each test on a key prefix of its
# own; tests/test_checks.py unsilences W010 where it tests it.
SILENCED_SYSTEM_CHECKS = ["whos_online.W010"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
