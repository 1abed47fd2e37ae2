"""The test runner of Spirit's own suite with whos_online installed (tests/settings_spirit_suite.py).

Django's runner, plus what Spirit's runtests.py does (a Celery app from the settings, so
its Celery tests run eagerly), less the one test that needs Spirit's git checkout.

whos_online's alias is a redis-server of the run's own, on a spare port (fakeredis where
redis-server is not installed, except in CI), never REDIS_URL's: Spirit's test helper ``cache_clear()``
clears every cache alias, a FLUSHDB of whos_online's database before many of its tests.
So whos_online's keys are looked at after each test, not once at the end.

The run fails unless as many of Spirit's tests passed as of Spirit 0.14.3's and, during them, whos_online
rendered its block and listed members and a topic room: a run of 0 tests (Django's
runner calls that a success) or an inert whos_online cannot pass.
"""

from __future__ import annotations

import os
import shutil
import sys
import unittest
from collections import Counter
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings
from django.test.runner import DiscoverRunner
from django.test.signals import template_rendered
from django.test.utils import iter_test_cases, override_settings

from tests.redis_server import REDIS_SERVER, RedisServer
from whos_online.conf import conf
from whos_online.rendering.block import SITE_TEMPLATE
from whos_online.store.connection import get_client

# Spirit 0.14.3 ships 645 tests: one is left out below, and Spirit skips two itself
# (they test Django < 3.1).
SPIRIT_PASSES = 642
LEFT_OUT = {
    # It checks for the Transifex config (.tx) next to the spirit package, which only
    # Spirit's git checkout has, not the installed wheel.
    "spirit.core.tests.tests_commands.CommandsTests.test_command_spirittxpush",
}
# What whos_online did during Spirit's tests; each must have happened at least once.
BLOCKS = "block renders"
MEMBERS = "tests after which members were listed"
ROOMS = "tests after which a topic room was listed"


class SpiritSuiteRunner(DiscoverRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server = RedisServer(directory=Path(settings.SCRATCH, "redis"))
        self.real_redis: override_settings | None = None
        self.seen: Counter[str] = Counter()
        self.problems: list[str] = []

    def setup_test_environment(self, **kwargs: Any) -> None:
        super().setup_test_environment(**kwargs)
        app = Celery("test")  # Spirit's runtests.py: CELERY_TASK_ALWAYS_EAGER applies
        app.config_from_object("django.conf:settings", namespace="CELERY")
        app.autodiscover_tasks()
        template_rendered.connect(self.count_block)
        if REDIS_SERVER or os.environ.get("CI"):  # start() says what to install
            alias = {  # docs/tutorial.md's
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": self.server.start().url,
                "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
            }
            self.real_redis = override_settings(CACHES={**settings.CACHES, "whos_online": alias})
            self.real_redis.enable()

    def teardown_test_environment(self, **kwargs: Any) -> None:
        if self.real_redis is not None:
            self.real_redis.disable()
            self.server.close()
        shutil.rmtree(settings.SCRATCH, ignore_errors=True)
        super().teardown_test_environment(**kwargs)

    def count_block(self, sender: Any, template: Any, **kwargs: Any) -> None:
        self.seen[BLOCKS] += template.name == SITE_TEMPLATE

    def look(self) -> None:
        """After a test: what whos_online's Redis lists (until a later test's cache_clear())."""
        client = get_client()
        self.seen[MEMBERS] += client.zcard(conf.keys().users) > 0
        rooms = client.zrange(conf.rooms_key, 0, -1)
        self.seen[ROOMS] += any(room.startswith(b"topic:") for room in rooms)

    def build_suite(self, *args: Any, **kwargs: Any) -> unittest.TestSuite:
        found = iter_test_cases(super().build_suite(*args, **kwargs))
        tests = [test for test in found if test.id() not in LEFT_OUT]
        self.log(f"Left out: {', '.join(sorted(LEFT_OUT))} (it needs Spirit's git checkout).")
        for test in tests:
            test.addCleanup(self.look)
        return unittest.TestSuite(tests)

    def run_suite(self, suite: unittest.TestSuite, **kwargs: Any) -> unittest.TestResult:
        result = super().run_suite(suite, **kwargs)
        server = self.server.url if self.real_redis is not None else "fakeredis"
        print(f"whos_online on {server} during Spirit's tests: {dict(self.seen)}", file=sys.stderr)
        passed = result.testsRun - len(result.skipped + result.failures + result.errors)
        print(f"{passed} of Spirit's tests passed", file=sys.stderr)
        if passed < SPIRIT_PASSES:
            self.problems.append(f"{passed} of Spirit's tests passed, not {SPIRIT_PASSES}")
        self.problems += [
            f"whos_online: no {what}" for what in (BLOCKS, MEMBERS, ROOMS) if not self.seen[what]
        ]
        return result

    def suite_result(self, suite: unittest.TestSuite, result: Any, **kwargs: Any) -> int:
        for problem in self.problems:
            print(f"FAILED: {problem}", file=sys.stderr)
        return super().suite_result(suite, result, **kwargs) + len(self.problems)
