def dedupe(items):
    """The items without repeats, first occurrences in their original order."""
    return list(set(items))
