"""Locust plays a fixed list of distinct visitors against the load site, then quits.

Run by tests/test_load.py as a subprocess (locust monkey-patches with gevent, so
it never runs inside pytest). The environment says how many visitors to play:

- LOAD_GUESTS guests: guest n views two pages from its own address (10.0.0.1 + n,
  or for every fourth 2001:db8:0:n::1, an IPv6 /64 of its own), sent as the
  last X-Forwarded-For entry as a trusted proxy would append it. Half of them
  put a forged address in front, which the site must ignore (it trusts one
  proxy).
- LOAD_MEMBERS members: member n browses from 10.128.0.1 + n (never a guest's
  address): a page as a guest, a login as member<n> with LOAD_PASSWORD, two
  pages as the member. The login takes their address off the guest count, so
  the site should end with exactly LOAD_GUESTS guests and LOAD_MEMBERS members.

Each visitor starts with an empty cookie jar and keeps its cookies for its own
pages. The visitors are shuffled with a fixed seed and handed out in order by
one counter; one locust process with cooperative greenlets makes that exact.

At the end LOAD_REPORT (a JSON file) gets what was played and seen: the guest
addresses and usernames of the visitors that completed, how many requests were
made and failed (by our count and locust's), every non-2xx or unexpected page,
and every response whose "online" cookie broke the throttle's contract: set on a
visitor's first page and on their first page after logging in, never otherwise.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import random
import time
from typing import Any
from urllib.parse import urlencode

import gevent
from locust import FastHttpUser, constant, events, task
from locust.exception import StopUser

GUESTS = int(os.environ["LOAD_GUESTS"])
MEMBERS = int(os.environ["LOAD_MEMBERS"])
PASSWORD = os.environ["LOAD_PASSWORD"]
REPORT = os.environ["LOAD_REPORT"]
FORGED = "198.51.100.7"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def _plan() -> list[tuple[str, int]]:
    kinds = ["guest"] * GUESTS + ["member"] * MEMBERS
    random.Random(20240601).shuffle(kinds)
    numbers = {"guest": itertools.count(), "member": itertools.count()}
    return [(kind, next(numbers[kind])) for kind in kinds]


PLAN = _plan()
_next_visitor = itertools.count()

report: dict[str, Any] = {
    "planned_guests": GUESTS,
    "planned_members": MEMBERS,
    "guests": [],  # addresses of guests that completed every page
    "members": [],  # usernames of members that completed every page
    "finished": 0,
    "requests": 0,
    "bad": [],  # non-2xx or unexpected pages
    "cookie_mismatches": [],  # online cookie set when it should not be, or the reverse
    "started": None,
    "stopped": None,
}


def guest_address(n: int) -> str:
    if n % 4 == 3:
        # A /64 of its own: the site counts an IPv6 /64 as one guest.
        return str(ipaddress.IPv6Address("2001:db8::1") + (n << 64))
    return str(ipaddress.IPv4Address("10.0.0.1") + n)


def member_address(n: int) -> str:
    return str(ipaddress.IPv4Address("10.128.0.1") + n)


class Visitor(FastHttpUser):
    wait_time = constant(0)
    default_headers = {"User-Agent": BROWSER}

    @task
    def next_visitor(self) -> None:
        index = next(_next_visitor)
        if index >= len(PLAN):
            raise StopUser()
        if report["started"] is None:
            report["started"] = time.time()
        kind, n = PLAN[index]
        self.client.cookiejar.clear()
        try:
            if kind == "guest":
                self.guest(n)
            else:
                self.member(n)
        finally:
            report["finished"] += 1
            if report["finished"] == len(PLAN):
                report["stopped"] = time.time()
                # Not from this greenlet: quitting kills every user's greenlet.
                gevent.spawn(self.environment.runner.quit)

    def guest(self, n: int) -> None:
        address = guest_address(n)
        forwarded = f"{FORGED}, {address}" if n % 2 else address
        pages = [
            ("GET", "/", "Hello, guest.", True, None),
            ("GET", "/about/", "Hello, guest.", False, None),
        ]
        if self.browse(forwarded, pages):
            report["guests"].append(address)

    def member(self, n: int) -> None:
        address = member_address(n)
        username = f"member{n:05d}"
        hello = f"Hello, {username}."
        credentials = urlencode({"username": username, "password": PASSWORD})
        pages = [
            ("GET", "/", "Hello, guest.", True, None),
            ("POST", "/login/", f"Welcome, {username}.", False, credentials),
            # The session cookie changed: recorded again, now as the member.
            ("GET", "/", hello, True, None),
            ("GET", "/about/", hello, False, None),
        ]
        if self.browse(address, pages):
            report["members"].append(username)

    def browse(self, forwarded: str, pages: list[tuple[str, str, str, bool, str | None]]) -> bool:
        """Fetch the pages in order; stop at the first bad one and return False."""
        return all(self.fetch(forwarded, *page) for page in pages)

    def fetch(
        self, forwarded: str, method: str, path: str, text: str, sets_online: bool, body: str | None
    ) -> bool:
        headers = {"X-Forwarded-For": forwarded}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        report["requests"] += 1
        where = f"{method} {path} from {forwarded}"
        with self.client.request(
            method, path, data=body, headers=headers, catch_response=True, allow_redirects=False
        ) as response:
            status = response.status_code
            page = response.text or ""
            if not 200 <= status < 300 or text not in page:
                report["bad"].append(f"{where}: {status} {page[:200]!r}")
                response.failure(f"{status}, expected a 2xx page saying {text!r}")
                return False
            cookies = response.headers.getlist("Set-Cookie")
            online = any(cookie.startswith("online=") for cookie in cookies)
            if online != sets_online:
                report["cookie_mismatches"].append(
                    f"{where}: online cookie {'set' if online else 'not set'}"
                )
            response.success()
            return True


@events.quitting.add_listener
def write_report(environment: Any, **kwargs: Any) -> None:
    report["locust_requests"] = environment.stats.total.num_requests
    report["locust_failures"] = environment.stats.total.num_failures
    with open(REPORT, "w", encoding="utf-8") as file:
        json.dump(report, file)
