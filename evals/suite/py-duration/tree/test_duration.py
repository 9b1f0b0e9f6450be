from duration import parse_duration

assert parse_duration("45s") == 45
assert parse_duration("1h30m") == 5400
print("ok")
