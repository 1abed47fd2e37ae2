"""The demo's people, made on whichever user model the settings use.

On ``demo.settings`` that is Django's ``User`` (username, first and last name);
on ``demo.settings_email`` it is ``accounts.EmailUser`` (email address and one
full-name field), where ``alice`` logs in as ``alice@example.com``. Everything
else in the demo goes through these few functions, so both sites share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model

EMAIL_DOMAIN = "example.com"  # RFC 2606: never anyone's real address
PASSWORD = "demo"


@dataclass(frozen=True)
class Person:
    """Someone in the demo: ``login`` is the username (or the email's local part)."""

    login: str
    first_name: str = ""
    last_name: str = ""
    is_staff: bool = False
    is_superuser: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


# Who you can log in as (password "demo"). carol is hidden (demo.cards).
ACCOUNTS = (
    Person("alice", "Alice", "Archer"),
    Person("bob", "Bob", "Baker"),
    Person("carol", "Carol", "Chen"),
    # Sees hidden members and the admin's "Online now" page.
    Person("admin", "Ada", "Admin", is_staff=True, is_superuser=True),
)
STAFF_LOGIN = "admin"

# The simulated members: nobody can log in as them (no usable password). They
# show what a block has to cope with: names with accents and in a right-to-left
# script (the block puts names in <bdi>), members with no name at all (the
# username, or "Member #<pk>" on the email site), a moderator (staff colour),
# a hidden member (heidi), and one whose name carries HTML (escaped).
SIMULATED = (
    Person("dave", "Dave", "Dias"),
    Person("erin", "Erin", "Evans"),
    Person("frank"),
    Person("grace", "Grace", "Gómez"),
    Person("mallory", "<b>Mallory</b>"),
    Person("heidi", "Heidi", "Huang"),
    Person("ivan", "Ivan", "Ivanov"),
    Person("judy"),
    Person("yasmin", "ياسمين", "العلي"),
    Person("olivia", "Olivia", "Okafor", is_staff=True),
    Person("peggy", "Peggy", "Park"),
    Person("trent", "Trent", "Taylor"),
)


def logs_in_by_email() -> bool:
    return get_user_model().USERNAME_FIELD == "email"


def login_for(login: str) -> str:
    """What to type in the login form's first field: ``alice`` or ``alice@example.com``."""
    return f"{login}@{EMAIL_DOMAIN}" if logs_in_by_email() else login


def login_of(user: Any) -> str:
    """The inverse of ``login_for``: ``alice`` for alice, on either user model."""
    return str(user.get_username()).partition("@")[0]


def get_or_create(person: Person, password: str | None = None) -> tuple[Any, bool]:
    """The person's user, created if missing (without ``password``: an unusable one)."""
    model = get_user_model()
    login = login_for(person.login)
    user = model._default_manager.filter(**{model.USERNAME_FIELD: login}).first()
    if user is not None:
        return user, False
    flags = {"is_staff": person.is_staff, "is_superuser": person.is_superuser}
    if logs_in_by_email():
        fields = {"full_name": person.full_name}
    else:
        fields = {"first_name": person.first_name, "last_name": person.last_name}
    user = model._default_manager.create_user(login, password=password, **fields, **flags)
    return user, True
