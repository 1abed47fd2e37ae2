"""The default ``WHOS_ONLINE_IS_BOT`` filter: requests that are no visitor at a screen.

Crawlers never keep cookies, so without a filter every crawler request would be
a Redis write and a fake guest. Known crawlers are recognised with the
maintained pattern list of the ``crawler-user-agents`` package, a runtime
dependency: the default install must not count crawlers. Scripted clients (curl,
python-requests, Wget) are on that list too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from crawleruseragents import is_crawler
from django.http import HttpRequest

__all__ = ["HEALTH_CHECKERS", "PREFETCH_HEADERS", "is_bot", "known_crawler"]

# Load balancers' and orchestrators' probes, which crawler-user-agents 1.67 does
# not list (it has UptimeRobot, Pingdom, StatusCake, Datadog, Zabbix and the like).
HEALTH_CHECKERS = re.compile(
    r"kube-probe|ELB-HealthChecker|GoogleHC|Consul Health|Envoy/HC|health.?check|"
    r"NewRelicPinger|Traffic Manager|^AlwaysOn|Prometheus/|HetrixTools|Freshping",
    re.IGNORECASE,
)

# Headers browsers send on speculative loads that the visitor may never see.
PREFETCH_HEADERS = {
    "HTTP_SEC_PURPOSE": "prefetch",  # Chromium speculation rules (also "prefetch;prerender")
    "HTTP_PURPOSE": "prefetch",  # older Chromium and Safari
    "HTTP_X_PURPOSE": "preview",  # Safari top sites
    "HTTP_X_MOZ": "prefetch",  # Firefox
}


def is_bot(request: HttpRequest) -> bool:
    """True for HEAD requests, prefetches, an empty User-Agent, crawlers and health checks."""
    if request.method == "HEAD":
        return True
    meta = request.META
    if any(
        value in str(meta.get(header, "")).lower() for header, value in PREFETCH_HEADERS.items()
    ):
        return True
    # Real User-Agents are a few hundred characters; a longer one is cut so a
    # huge header cannot make the pattern search expensive.
    user_agent = str(meta.get("HTTP_USER_AGENT", "")).strip()[:512]
    return not user_agent or known_crawler(user_agent)


# The crawler list's cache, the one keyed by what a request sends: its ~1,500 patterns
# take 120-130 us to rule out a browser's User-Agent (a quarter of a new guest's
# record), and visitors share a few hundred. Bounded: a client sending fresh ones
# only evicts entries, and pays the search itself (benchmarks/INSTRUCTIONS.md).
@lru_cache(maxsize=4096)
def known_crawler(user_agent: str) -> bool:
    """Whether the User-Agent is a crawler or a health check."""
    return bool(HEALTH_CHECKERS.search(user_agent) or is_crawler(user_agent))
