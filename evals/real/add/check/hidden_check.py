from calc import add

for a, b in [(0, 0), (2, 3), (-4, 1), (10, -10), (7, 7)]:
    assert add(a, b) == a + b, (a, b, add(a, b))
print("hidden check: ok")
