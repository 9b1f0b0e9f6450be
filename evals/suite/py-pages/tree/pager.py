def pages(items, per_page):
    """How many pages `items` entries fill, `per_page` to a page."""
    return items // per_page
