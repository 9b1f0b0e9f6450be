out=$(mktemp)
gcc -o "$out" absval.c test_abs.c || exit 2
"$out"; rc=$?
rm -f "$out"
[ "$rc" = 0 ] && echo ok || echo "my_abs(-3) != 3"
exit "$rc"
