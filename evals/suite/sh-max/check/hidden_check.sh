check() { want=$1; shift; got=$(sh max.sh "$@"); [ "$got" = "$want" ] || { echo "max $*: expected $want, got $got"; exit 1; }; }
check 3 1 2 3
check 100 99 100 7
check -1 -5 -1 -3
check 42 42
echo "hidden check: ok"
