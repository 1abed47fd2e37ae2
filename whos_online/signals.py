"""Login and logout change the list at once, without waiting for the next request."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.dispatch import receiver

from whos_online import presence
from whos_online.store import failsafe
from whos_online.visitors.visits import page_of


@receiver(user_logged_in, dispatch_uid="whos_online.record_login")
def record_login(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Count the visitor as a member now, and no longer as a guest (one write; if
    Redis fails, their next request does the same, so nobody is counted twice)."""
    page = page_of(request)
    if page is None:
        failsafe.write(presence.record_user, user)
    else:
        page.record_member(user, login=True)


@receiver(user_logged_out, dispatch_uid="whos_online.forget_logout")
def forget_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Count the visitor as a guest now, and no longer as a member."""
    if user is not None:
        failsafe.write(presence.forget_user, user)
        page = page_of(request)
        if page is not None:
            page.record_guest()
