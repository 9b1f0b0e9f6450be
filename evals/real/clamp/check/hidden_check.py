from bounds import clamp

CASES = [(5, 0, 10, 5), (-3, 0, 10, 0), (42, 0, 10, 10), (0, 0, 0, 0), (2.5, 1, 3, 2.5)]
for x, lo, hi, want in CASES:
    assert clamp(x, lo, hi) == want, (x, lo, hi, clamp(x, lo, hi))
print("hidden check: ok")
