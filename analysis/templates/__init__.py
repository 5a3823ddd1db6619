"""The report's page templates (Jinja2, read by analysis/report.py): data only, a package so that
setuptools installs them as it does the prompt templates."""
