"""The ``home`` app of a site made by ``wagtail start``: its HomePage, for tests/test_wagtail.py."""
