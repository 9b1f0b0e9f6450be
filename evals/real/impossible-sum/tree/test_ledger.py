from ledger import total

assert total([]) == 0
assert total([2, 2]) == 5
print("ok")
