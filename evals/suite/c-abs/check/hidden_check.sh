out=$(mktemp)
cat > "$out.c" <<'EOF2'
int my_abs(int x);
int main(void) {
    int cases[][2] = {{0, 0}, {-1, 1}, {5, 5}, {-100, 100}};
    for (int i = 0; i < 4; i++) if (my_abs(cases[i][0]) != cases[i][1]) return 1;
    return 0;
}
EOF2
gcc -o "$out" absval.c "$out.c" || exit 2
"$out"; rc=$?
rm -f "$out" "$out.c"
[ "$rc" = 0 ] && echo "hidden check: ok"
exit "$rc"
