def median(values):
    """The median of a non-empty list of numbers."""
    xs = sorted(values)
    n = len(xs)
    return xs[n // 2]
