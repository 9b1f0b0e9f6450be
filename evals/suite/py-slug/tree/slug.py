import re


def slugify(title):
    """A URL slug: lower-case words joined by hyphens, punctuation dropped."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "_".join(words)
