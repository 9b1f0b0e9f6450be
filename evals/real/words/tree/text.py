def count_words(text):
    """The number of whitespace-separated words in text."""
    if not text:
        return 0
    return len(text.split(" "))
