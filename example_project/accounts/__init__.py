"""An email-login user model, as many sites have: the demo's second settings module uses it.

``python example_project/manage.py demo --settings demo.settings_email`` runs the
demo on it, and ``tests/settings_email.py`` runs tests/test_email_login.py on it.
"""
