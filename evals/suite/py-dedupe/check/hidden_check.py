from listutil import dedupe

assert dedupe([]) == []
assert dedupe(["z", "y", "z", "x", "y"]) == ["z", "y", "x"]
assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]
print("hidden check: ok")
