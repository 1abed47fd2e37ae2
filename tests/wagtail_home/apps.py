from django.apps import AppConfig


class HomeConfig(AppConfig):
    name = "tests.wagtail_home"
    label = "home"
    default_auto_field = "django.db.models.BigAutoField"
