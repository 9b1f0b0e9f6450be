def shout(text):
    """text in upper case."""
    return text
