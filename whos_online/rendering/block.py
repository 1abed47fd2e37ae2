"""The site and room blocks as HTML: what the template tags, the Jinja2 globals, the JSON
endpoint and the hub's pushes all render, so a block looks the same on every surface.

A block is a context (``site_block``, ``room_block``) filled into whos_online's
templates (``render_block``), rendered once per cached summary and language where
the templates are whos_online's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote
from weakref import WeakKeyDictionary

from django import template
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.template import Engine
from django.template.context import make_context
from django.templatetags.static import static
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString
from django.utils.text import slugify
from django.utils.timezone import get_current_timezone
from django.utils.translation import get_language, gettext

from whos_online.access import RoomAccess
from whos_online.conf import conf
from whos_online.rendering import announcements, blockcache
from whos_online.room_names import checked_room
from whos_online.store import failsafe, reading, recording
from whos_online.visitors.beacon import room_token
from whos_online.visitors.visits import access_of, page_of

logger = logging.getLogger(__name__)

# Seconds; a faster poll would cost every open tab a request for little news.
MIN_REFRESH = 5

# A presence dot's word while Redis is down: not "offline", which would be a claim.
UNAVAILABLE_WORD = "unavailable"


SITE_TEMPLATE = "whos_online/whos_online.html"
ROOM_TEMPLATE = "whos_online/room.html"
# Every template the blocks render, for telling whos_online's own from a site's override.
TEMPLATES = (
    SITE_TEMPLATE,
    ROOM_TEMPLATE,
    "whos_online/counts.html",
    "whos_online/members.html",
    "whos_online/beacon.html",
)
OWN_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


# Said with a bad room: a missing variable, or add, which gives "" for text plus a number.
ROOM_HINT = (
    ' Pass the parts of the name, e.g. {% whos_here "topic" topic.pk %} (in Jinja2,'
    ' whos_here("topic", topic.pk)): "topic:"|add:topic.pk is "", add does not join text'
    " and a number."
)


def room_html(
    request: Any, parts: tuple[Any, ...], live: bool, context: template.Context | None = None
) -> SafeString:
    """The room block; for parts that name no room an error under DEBUG, else nothing."""
    name = checked_room(parts, "whos_here", ROOM_HINT)
    block = None if name is None else room_block(request, name, live)
    return SafeString("") if block is None else render_block(ROOM_TEMPLATE, block, context)


def site_html(
    request: Any, live: int, context: template.Context | None = None, cached: bool = False
) -> SafeString:
    """The site block; nothing for a viewer ``WHOS_ONLINE_ACCESS`` shows nothing."""
    block = site_block(request, live, cached)
    return SafeString("") if block is None else render_block(SITE_TEMPLATE, block, context)


def _mark_if_own_view(request: Any) -> bool:
    """A member's block is their own view (staff see hidden members, a policy may show
    members more): the middleware makes the response ``private`` with ``Vary: Cookie``
    (see docs/howto/cached-pages.md). A guest's is everyone's view, a page a cache may
    keep: True, its block carries the beacon."""
    page = page_of(request)
    if page is not None and page.member is not None:
        page.private = True
        return False
    return page is not None


def beacon_url(room: str | None = None) -> str | None:
    """The beacon's URL for a guest's block (``visitors.beacon``), None without the URLconf."""
    try:
        url = reverse("whos_online:beacon")
    except NoReverseMatch:
        return None
    return url if room is None else f"{url}?room={quote(room_token(room), safe='')}"


def shown_access(request: Any, room: str | None) -> RoomAccess | None:
    """What ``WHOS_ONLINE_ACCESS`` shows this request's viewer of ``room`` (None: the site;
    no request: an anonymous visitor).

    A policy that needs the database cannot be asked on the event loop (a block
    rendered by an async view) unless the middleware asked it already: that
    viewer is shown nothing.
    """
    page = page_of(request)
    return access_of(None, room) if page is None else page.access(room)


def site_block(request: Any, live: int = 0, cached: bool = False) -> dict[str, Any] | None:
    """The context of ``whos_online/whos_online.html``; ``online`` is None if Redis is down.

    None if ``WHOS_ONLINE_ACCESS`` shows this viewer nothing. ``cached``: what an
    anonymous visitor is shown, for a page a cache may keep for anyone.
    """
    granted = shown_access(None if cached else request, None)
    if granted is None:
        return None
    beacon = cached or _mark_if_own_view(request)
    online = blockcache.for_request(request, names=granted.names, shared=cached)
    block: dict[str, Any] = {
        "beacon": beacon_url() if beacon else None,
        "renew": conf.cookie_age,
        "online": online,
        "members_html": lambda: members_html(online, "whos-online"),  # made if rendered
        "window_minutes": conf.window_minutes,
        "request": request,
        "counts_only": not granted.names,
    }
    if live or cached:
        try:
            block["live_url"] = reverse("whos_online:live")
        except NoReverseMatch:
            _no_live_urls(
                "A live block ({% whos_online live=… %})"
                if live
                else "A cached block ({% whos_online cached=True %})"
            )
            return block  # as a block without live=: it shows, it does not refresh
        block["fill"] = cached
    if live:
        block["live"] = max(int(live), MIN_REFRESH)
        block["ws_url"] = conf.websocket_url
        # A cached page's block is nobody's: its first poll only learns what is shown.
        block["shown"] = "" if cached else shown_members(online)
    return block


NO_LIVE_URLS = (
    ' reads an endpoint: add path("whos-online/", include("whos_online.urls")) to your URLconf.'
)
_told_of_live_urls = False


def _no_live_urls(block: str) -> None:
    """A live block without its endpoint: an error under DEBUG; else one ERROR per process,
    and the block is shown without its live part (a page is never a 500 for it)."""
    global _told_of_live_urls
    if settings.DEBUG:
        raise ImproperlyConfigured(block + NO_LIVE_URLS)
    if not _told_of_live_urls:
        _told_of_live_urls = True
        logger.error("%s Until then such blocks show without refreshing.", block + NO_LIVE_URLS)


def room_block(request: Any, name: str, live: bool = False) -> dict[str, Any] | None:
    """The context of ``whos_online/room.html``; ``online`` is None if Redis is down.

    None if ``WHOS_ONLINE_ACCESS`` shows this viewer nothing of the room.
    """
    granted = shown_access(request, name)
    if granted is None:
        return None
    beacon = _mark_if_own_view(request)
    online = blockcache.for_request(request, name, granted.names)
    ws_url = conf.websocket_url
    live = live and bool(ws_url)
    return {
        "online": online,
        "members_html": lambda: members_html(online, "whos-here"),  # made if rendered
        "room": name,
        "beacon": beacon_url(name) if beacon else None,
        "window_minutes": conf.room_window_minutes,
        "request": request,
        "ws_url": f"{ws_url}{quote(name, safe='')}/" if live else None,
        "shown": shown_members(online) if live else "",
        "counts_only": not granted.names,
    }


STYLESHEET = "whos_online/whos_online.css"


def style_link(request: Any) -> SafeString:
    """The optional stylesheet's ``<link>``, once per page: a ``<link rel="stylesheet">``
    is valid in the body, so a template whose ``<head>`` a site cannot reach (a third
    party's base, its head block filled without ``block.super``) still loads it."""
    page = page_of(request)
    if page is not None:
        if page.style_linked:
            return SafeString("")
        page.style_linked = True
    return SafeString(f'<link rel="stylesheet" href="{escape(static(STYLESHEET))}">')


def shown_members(online: reading.Summary | None) -> str:
    """The members a live block shows, as ``X-Whos-Online-Shown`` carries them, for its
    ``data-whos-online-shown``: ``live.js`` then says a change that comes before the
    block's first update. Built once per cached summary."""
    if online is None:
        return ""
    done = online.rendered.get("shown")
    if done is None:
        done = online.rendered["shown"] = announcements.shown(online)
    return str(done)


def render_block(
    name: str, block: dict[str, Any], context: template.Context | None = None
) -> SafeString:
    """A block's template filled with ``block``, rendered once per cached summary where it can be.

    Rendering is most of a kept block's time (a page with the block 3x faster
    with this). whos_online's own templates read nothing of the request, so their
    output for one summary depends only on the key below; a site's override may
    read anything, so it is rendered every time. Without a template ``context``
    (the JSON endpoint, Jinja2) the block renders as ``render_to_string`` does.
    """
    bound = context.template if context is not None else None
    engine = bound.engine if bound is not None else Engine.get_default()
    online = block["online"]
    if online is None or not _own_templates(engine):
        return _render(engine, name, block, context)
    flags = (context.autoescape, context.use_l10n, context.use_tz) if context else None
    key: tuple[Any, ...] = (name, engine, get_language(), get_current_timezone(), flags)
    varies = (
        "room",
        "window_minutes",
        "live",
        "live_url",
        "ws_url",
        "fill",
        "counts_only",
        "beacon",
        "renew",
    )
    key += tuple(block.get(vary) for vary in varies)
    done = online.rendered.get(key)
    if done is None:
        done = online.rendered[key] = _render(engine, name, block, context)
    return SafeString(done)


def _render(
    engine: Engine, name: str, block: dict[str, Any], context: template.Context | None
) -> SafeString:
    found = engine.get_template(name)
    if context is None:  # as render_to_string(name, block, request) does
        return SafeString(found.render(make_context(block, block["request"])))
    return SafeString(found.render(context.new(block)))


_own: WeakKeyDictionary[Engine, bool] = WeakKeyDictionary()


def _own_templates(engine: Engine) -> bool:
    """Whether ``engine`` finds whos_online's own block templates, not a site's overrides.

    Looked up once per engine, but each time under DEBUG, where an override
    may be added while the development server runs.
    """
    known = _own.get(engine)
    if known is None:
        origins = [Path(engine.get_template(name).origin.name) for name in TEMPLATES]
        known = all(origin.is_relative_to(OWN_TEMPLATES) for origin in origins)
        if not engine.debug:
            _own[engine] = known
    return known


def members_html(online: reading.Summary | None, css: str) -> SafeString:
    """The listed members as ``<li>`` items, for ``whos_online/members.html``.

    Built here rather than by a template loop, several times slower for a long
    list; an overriding template may still loop over ``online.members``. Every
    value is escaped.
    """
    if online is None:
        return SafeString("")
    hidden_mark = escape(gettext("(hidden)"))
    # In words, not by a colour alone (the stylesheet adds a dot).
    idle_word = escape(gettext("(idle)"))
    idle_mark = f'<span class="{css}-status">{idle_word}</span>'
    items = []
    for member in online.members:
        classes = f"{css}-member {css}-{member.status}"
        if member.hidden:
            classes += f" {css}-hidden"
        role = member.extra.get("role")
        if role:
            classes += f" {css}-role-{slugify(role)}"
        name = f"<bdi>{escape(member.name)}</bdi>"
        if member.url:
            name = f'<a href="{escape(member.url)}">{name}</a>'
        if member.avatar:
            name = (
                f'<img class="{css}-avatar" src="{escape(member.avatar)}" alt="" width="20" '
                f'height="20" loading="lazy"> {name}'
            )
        if member.hidden:
            name += f" {hidden_mark}"
        if member.status == "idle":
            name += f" {idle_mark}"
        items.append(f'<li class="{escape(classes)}">{name}</li>')
    # A line between items: a site's CSS that makes them inline still shows them apart.
    return SafeString("\n".join(items))


def statuses_of(users: Iterable[Any], request: Any) -> Mapping[str, str]:
    """Statuses of users (or members, or pks) in one round trip; each "unavailable" if
    Redis is down, so a dot never says "offline" for someone Redis could not answer about.

    Hidden members read as offline unless the ``request``'s user is staff (no request:
    nobody is looking).
    """
    pks = [recording.member_id(user) for user in users]
    page = page_of(request)
    looking = None if page is None else page.viewer
    if reading.is_staff(looking):  # hidden members' own statuses
        page.private = True  # type: ignore[union-attr]
    found = failsafe.call(reading.statuses, pks, viewer=looking)
    return (
        dict.fromkeys(pks, UNAVAILABLE_WORD) if isinstance(found, failsafe.Unavailable) else found
    )


def status_word(user: Any, statuses: Mapping[str, str] | None = None) -> str:
    """A user's (or member's, or pk's) status word, from ``statuses`` if given, else from
    Redis, where nobody is looking: a hidden member reads as offline ("unavailable"
    while Redis is down)."""
    pk = recording.member_id(user)
    if statuses is None:
        statuses = statuses_of([pk], None)
    return statuses.get(pk, "offline")
