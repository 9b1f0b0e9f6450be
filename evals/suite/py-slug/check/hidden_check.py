from slug import slugify

assert slugify("A  B") == "a-b"
assert slugify("Release 2.0 notes") == "release-2-0-notes"
assert slugify("") == ""
print("hidden check: ok")
