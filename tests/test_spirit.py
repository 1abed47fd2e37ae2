"""Spirit (django-spirit), the forum issue 27 measured, set private: guests are still sent
to log in on a topic page that WHOS_ONLINE_ROOMS made a room.

Issue 27 wrapped Spirit's topic view in ``@in_room`` in the site's own URLconf; the
page lost the ``spirit`` URL namespace, which Spirit's PrivateForumMiddleware reads,
and guests read a private forum. Here Spirit's URLconf is included as its project
template does and the room comes from the URL name alone (tests/settings_spirit.py).
Spirit requires Django < 6: only the nox session ``spirit`` installs it and runs this
module (``--ds tests.settings_spirit``); elsewhere it collects nothing (``__test__``).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.management import call_command

from tests import online_now
from tests.conftest import BrowserClient, names
from tests.test_rooms import logged_in, room_keys
from whos_online.checks import deployment as deployment_checks

__test__ = "spirit.core" in settings.INSTALLED_APPS

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(people: Any) -> Any:
    """A topic in Spirit's public category, by Spirit's models."""
    from spirit.category.models import Category
    from spirit.topic.models import Topic

    [author] = people("author")
    category = Category.objects.get(title="Uncategorized")
    return Topic.objects.create(user=author, category=category, title="Hot compost in winter")


def test_a_guest_on_the_private_forum_is_still_sent_to_log_in_and_recorded_nowhere(
    redis_db: redis.Redis, topic: Any, settings: Any
) -> None:
    url = topic.get_absolute_url()
    response = BrowserClient().get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/forum/user/login/?next={url}"
    assert room_keys(redis_db, settings) == []
    assert online_now.guest_count(room=f"topic:{topic.pk}") == 0


def test_members_reading_a_topic_are_listed_in_its_room(
    redis_db: redis.Redis, topic: Any, people: Any
) -> None:
    alice, bob = (logged_in(user) for user in people("alice", "bob"))
    url = topic.get_absolute_url()
    assert alice.get(url).status_code == 200
    response = bob.get(url)
    assert response.status_code == 200
    assert "Hot compost in winter" in response.content.decode()
    assert names(online_now.online_users(room=("topic", topic.pk))) == ["bob", "alice"]


def test_the_mapping_passes_the_checks_against_spirits_urls() -> None:
    call_command("check", "--fail-level", "ERROR")
    assert deployment_checks.check_rooms() == []
