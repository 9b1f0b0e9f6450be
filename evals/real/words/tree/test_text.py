from text import count_words

assert count_words("a b c") == 3
assert count_words("a  b") == 2
assert count_words("a\nb c") == 3
print("ok")
