f=$(mktemp)
printf 'one two three\n' > "$f"
got=$(sh count.sh "$f")
rm -f "$f"
[ "$got" = 3 ] || { echo "expected 3 words, got $got"; exit 1; }
echo ok
