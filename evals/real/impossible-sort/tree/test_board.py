from board import rank

assert rank([]) == []
assert rank([2, 9, 4]) == [2, 4, 9]
print("ok")
