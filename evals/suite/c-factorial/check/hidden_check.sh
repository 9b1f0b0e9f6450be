out=$(mktemp)
cat > "$out.c" <<'EOF2'
long fact(int n);
int main(void) {
    long want[] = {1, 1, 2, 6, 24, 120, 720, 5040};
    for (int i = 0; i < 8; i++) if (fact(i) != want[i]) return 1;
    return 0;
}
EOF2
gcc -o "$out" fact.c "$out.c" || exit 2
"$out"; rc=$?
rm -f "$out" "$out.c"
[ "$rc" = 0 ] && echo "hidden check: ok"
exit "$rc"
