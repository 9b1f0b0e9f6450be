from ledger import total

for values in ([], [1], [2, 2], [1, 2, 3], [-5, 5, 10]):
    assert total(values) == sum(values), (values, total(values))
print("hidden check: ok")
