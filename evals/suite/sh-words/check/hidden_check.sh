f=$(mktemp)
printf 'a b\nc d e\n\nf\n' > "$f"
got=$(sh count.sh "$f")
rm -f "$f"
[ "$got" = 6 ] || { echo "expected 6 words, got $got"; exit 1; }
echo "hidden check: ok"
