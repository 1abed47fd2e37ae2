"""``EmailUser``: logs in by email address, with an optional full name and no username.

The most common custom user model. Its login id is an email address, so a
who's-online block that showed ``get_username()`` would list addresses to
anonymous visitors; whos_online's default card shows the short name instead,
or "Member #<pk>" when there is none.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.utils import timezone


class EmailUserManager(BaseUserManager):  # type: ignore[type-arg]
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields: Any) -> EmailUser:
        if not email:
            raise ValueError("An email address is required.")
        user = self.model(email=self.normalize_email(email), **fields)
        user.set_password(password)  # None: an unusable password
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields: Any) -> EmailUser:
        fields.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **fields)


class EmailUser(AbstractBaseUser, PermissionsMixin):
    email = models.EmailField("email address", unique=True)
    full_name = models.CharField(max_length=150, blank=True)
    is_staff = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    date_joined = models.DateTimeField(default=timezone.now)

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    objects = EmailUserManager()

    class Meta:
        verbose_name = "user"
        verbose_name_plural = "users"

    def __str__(self) -> str:
        return self.email

    def get_full_name(self) -> str:
        return self.full_name.strip()

    def get_short_name(self) -> str:
        return self.get_full_name().split(" ")[0]
