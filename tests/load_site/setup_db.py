"""Create the load site's SQLite database and its members, before any server starts.

    python -m tests.load_site.setup_db MEMBERS PASSWORD

Members are named member00000, member00001, ...; all share PASSWORD.
"""

import os
import sqlite3
import sys

import django


def main(members: int, password: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.load_site.settings")
    django.setup()
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    hashed = make_password(password)
    User.objects.bulk_create(
        User(username=f"member{n:05d}", password=hashed) for n in range(members)
    )
    # WAL lets readers go on while a worker writes last_login; it stays set in the file.
    with sqlite3.connect(os.environ["LOAD_SITE_DB"]) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
    connection.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
