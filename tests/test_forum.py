"""A real forum from PyPI (django-machina): its topic pages are rooms by URL name alone.

Issue 27: wrapping a third party's view in ``@in_room`` in one's own URLconf
drops the app's URL namespace, and with it what relies on it. Here machina's
URLconf is included as its docs say and WHOS_ONLINE_ROOMS names
"forum_conversation:topic" (tests/settings_forum.py); machina's own permission
checks decide who reads what. Under tests.settings this module collects
nothing (``__test__``): tests/test_url_rooms.py runs it in a subprocess.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from tests import online_now
from tests.conftest import BrowserClient, names
from tests.settings_forum import ATTACHMENTS_CACHE
from tests.test_docs import apply_settings, snippets
from tests.test_rooms import listed, logged_in, room_keys
from whos_online.checks import deployment as deployment_checks

__test__ = "machina" in settings.INSTALLED_APPS

pytestmark = [
    pytest.mark.django_db,
    # machina's own use of what newer Djangos deprecate (select_related() without
    # fields on Django 6.1) is machina's to fix, not an error of whos_online.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:machina"),
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:machina"),
]


@pytest.fixture
def board(redis_db: redis.Redis, people: Any, settings: Any) -> dict[str, Any]:
    """A forum with two topics, machina's models as its views read them."""
    from machina.apps.forum.models import Forum

    # redis_db set CACHES to its Redis alone.
    settings.CACHES = {**settings.CACHES, "machina_attachments": ATTACHMENTS_CACHE}
    from machina.apps.forum_conversation.models import Post, Topic

    [author] = people("author")
    forum = Forum.objects.create(name="General", slug="general", type=Forum.FORUM_POST)
    topics = []
    for number in (1, 2):
        topic = Topic.objects.create(
            forum=forum,
            poster=author,
            subject=f"Topic number {number}",
            slug=f"topic-number-{number}",
            type=Topic.TOPIC_POST,
            status=Topic.TOPIC_UNLOCKED,
        )
        Post.objects.create(
            topic=topic, poster=author, subject=topic.subject, content="Hello", approved=True
        )
        topics.append(topic)
    return {"forum": forum, "topics": topics, "urls": [url(topic) for topic in topics]}


def url(topic: Any) -> str:
    return reverse(
        "forum_conversation:topic",
        kwargs={
            "forum_slug": topic.forum.slug,
            "forum_pk": topic.forum.pk,
            "slug": topic.slug,
            "pk": topic.pk,
        },
    )


def test_a_member_reading_a_topic_is_listed_in_its_room(board: dict[str, Any], people: Any) -> None:
    alice, bob = (logged_in(user) for user in people("alice", "bob"))
    first, second = board["topics"]
    alice.get(board["urls"][0])
    response = bob.get(board["urls"][0])
    html = response.content.decode()
    assert response.status_code == 200
    # machina's own page (its namespaced links resolved), with the block the site added
    assert "Topic number 1" in html and f'href="{reverse("forum:index")}"' in html
    assert "2 here now: 2 members, 0 guests" in html and listed(html) == ["bob", "alice"]
    assert names(online_now.online_users(room=("topic", first.pk))) == ["bob", "alice"]
    assert online_now.online_users(room=("topic", second.pk)) == []


# docs/howto/third-party-views.md's settings for machina's topic page: the string, in its
# two places, and the callable.
HOW_TO = "howto/third-party-views.md"
MACHINA_ROOMS = [
    s
    for s in snippets(HOW_TO, "python")
    if "WHOS_ONLINE_ROOMS" in s and '"forum_conversation:topic"' in s
]


@pytest.mark.parametrize("snippet", MACHINA_ROOMS, ids=["setting", "callable", "example"])
def test_each_setting_the_how_to_shows_lists_the_reader_in_the_topics_room(
    board: dict[str, Any], people: Any, settings: Any, snippet: str
) -> None:
    apply_settings(snippet, f"docs/{HOW_TO}", settings)
    [alice] = people("alice")
    html = logged_in(alice).get(board["urls"][1]).content.decode()
    assert "1 here now: 1 member, 0 guests" in html and listed(html) == ["alice"]
    assert online_now.online_users(room=("topic", board["topics"][0].pk)) == []


def test_a_member_who_moves_to_another_topic_leaves_the_first(
    board: dict[str, Any], people: Any
) -> None:
    first, second = board["topics"]
    alice, bob = (logged_in(user) for user in people("alice", "bob"))
    alice.get(board["urls"][0])
    bob.get(board["urls"][0])
    html = alice.get(board["urls"][1]).content.decode()
    assert listed(html) == ["alice"]
    assert names(online_now.online_users(room=f"topic:{first.pk}")) == ["bob"]
    assert names(online_now.online_users(room=f"topic:{second.pk}")) == ["alice"]


def test_a_guest_on_the_private_forum_is_sent_to_log_in_and_recorded_nowhere(
    redis_db: redis.Redis, board: dict[str, Any], settings: Any
) -> None:
    topic_url = board["urls"][0]
    response = BrowserClient().get(topic_url)
    # machina's own refusal: to the login page, back to the topic afterwards
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={topic_url}"
    assert room_keys(redis_db, settings) == []
    assert online_now.guest_count(room=f"topic:{board['topics'][0].pk}") == 0


def test_a_member_refused_a_forum_gets_its_403_and_is_recorded_nowhere(
    redis_db: redis.Redis, board: dict[str, Any], people: Any, settings: Any
) -> None:
    from machina.apps.forum_permission.models import ForumPermission, UserForumPermission

    [carol] = people("carol")
    UserForumPermission.objects.create(
        forum=board["forum"],
        user=carol,
        permission=ForumPermission.objects.get(codename="can_read_forum"),
        has_perm=False,
    )
    assert logged_in(carol).get(board["urls"][0]).status_code == 403
    assert room_keys(redis_db, settings) == []


def test_the_mapping_passes_the_checks_against_machinas_urls(settings: Any) -> None:
    call_command("check", "--fail-level", "ERROR")
    # The forum's kwargs come from machina's include above the topic pattern.
    settings.WHOS_ONLINE_ROOMS = {"forum_conversation:topic": "forum:{forum_pk}:{pk}"}
    assert deployment_checks.check_rooms() == []
    settings.WHOS_ONLINE_ROOMS = {"forum_conversation:topic": "topic:{topic_pk}"}
    [error] = deployment_checks.check_rooms()
    assert re.search(r"needs topic_pk, .* \(it has forum_pk, forum_slug, pk, slug\)", error.msg)
