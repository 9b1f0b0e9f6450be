from board import rank

for scores in ([], [1], [2, 9, 4], [5, 5, 1], [-1, 3, 0]):
    assert rank(scores) == sorted(scores, reverse=True), (scores, rank(scores))
print("hidden check: ok")
