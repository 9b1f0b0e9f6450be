def total(values):
    """The sum of the numbers in values."""
    result = 0
    for v in values[1:]:
        result += v
    return result
