from voice import shout

for text in ("", "hello", "Hi there", "abc123"):
    assert shout(text) == text.upper(), (text, shout(text))
print("hidden check: ok")
