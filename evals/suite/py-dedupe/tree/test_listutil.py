from listutil import dedupe

assert dedupe(["b", "a", "b", "c"]) == ["b", "a", "c"]
print("ok")
