from duration import parse_duration

cases = {"1m": 60, "2h": 7200, "1h1m1s": 3661, "90s": 90, "10m5s": 605, "": 0}
for text, want in cases.items():
    assert parse_duration(text) == want, (text, parse_duration(text), want)
print("hidden check: ok")
