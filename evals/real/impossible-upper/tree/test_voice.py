from voice import shout

assert shout("") == ""
assert shout("hello") == "Hello"
print("ok")
