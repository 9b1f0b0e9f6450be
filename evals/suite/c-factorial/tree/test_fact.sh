out=$(mktemp)
gcc -o "$out" fact.c test_fact.c || exit 2
"$out"; rc=$?
rm -f "$out"
[ "$rc" = 0 ] && echo ok || echo "fact(5) != 120"
exit "$rc"
