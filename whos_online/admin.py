"""The site owner's "Online now" page in the Django admin (staff only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.text import capfirst

from whos_online import chart, failsafe, presence
from whos_online.models import OnlineNow

# Members listed on the page; the counts cover everyone.
PAGE_LIMIT = 500


@admin.register(OnlineNow)
class OnlineNowAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """A read-only page instead of a change list: there are no rows, only Redis."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            return self.admin_site.login(request)
        return TemplateResponse(
            request,
            "admin/whos_online/online_now.html",
            {
                **self.admin_site.each_context(request),
                "title": capfirst(self.model._meta.verbose_name_plural),
                "opts": self.model._meta,
                "page": failsafe.call(_page),
            },
        )


def _page() -> dict[str, Any]:
    """Everything the page shows, read from Redis (4 round trips)."""
    online = presence.summary(PAGE_LIMIT, include_hidden=True)
    seen = presence.last_seen_many(online.usernames)
    statuses = presence.statuses(online.usernames)
    samples = presence.history()
    return {
        "online": online,
        "members": [
            (name, seen[name], statuses[name], name in online.hidden) for name in online.usernames
        ],
        "chart": chart.draw(samples),
        "samples": len(samples),
    }
