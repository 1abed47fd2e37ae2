"""tests.urls with django-machina's URLconf included as its docs say, in the words of
docs/howto/third-party-views.md (tests/settings_forum.py)."""

from tests.test_docs import run_snippet, snippets
from tests.urls import urlpatterns as site_urlpatterns

(MACHINA,) = [s for s in snippets("howto/third-party-views.md", "python") if "machina.urls" in s]
urlpatterns = [
    *run_snippet(MACHINA, "docs/howto/third-party-views.md", __name__).urlpatterns,
    *site_urlpatterns,
]
