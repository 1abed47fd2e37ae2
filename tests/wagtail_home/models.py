from wagtail.models import Page


class HomePage(Page):
    """The starter's page type, as ``wagtail start`` makes it."""
