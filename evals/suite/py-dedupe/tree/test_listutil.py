from listutil import dedupe

assert dedupe([3, 1, 3, 2]) == [3, 1, 2]  # ints: set order does not vary by hash seed
print("ok")
