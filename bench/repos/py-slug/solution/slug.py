"""URL slugs for titles."""
import re


def slugify(title):
    """Turn a title into the slug of its URL."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower().replace("'", "")).strip("-")
    return slug or "untitled"
