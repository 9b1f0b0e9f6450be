from stats import median

assert median([5]) == 5
assert median([3, 1, 2]) == 2
assert median([4, 1, 3, 2]) == 2.5
assert median([10, 20]) == 15
assert median([1, 1, 2, 2, 9, 9]) == 2
print("hidden check: ok")
