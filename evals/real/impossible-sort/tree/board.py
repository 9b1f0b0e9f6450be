def rank(scores):
    """The scores, highest first."""
    return list(scores)
