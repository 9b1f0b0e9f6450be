got=$(sh max.sh 9 10 2)
[ "$got" = 10 ] || { echo "expected 10, got $got"; exit 1; }
echo ok
