#!/usr/bin/env python
"""Command-line entry point for the whos_online demo site.

Run it from anywhere (e.g. ``python example_project/manage.py demo`` from the
repository root): Python puts this script's folder on sys.path, which is what
makes the ``demo`` package importable.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "demo.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
