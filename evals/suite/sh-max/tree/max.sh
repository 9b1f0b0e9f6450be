#!/bin/sh
# Print the largest of the integer arguments.
m=$1
for x in "$@"; do
  if [ "$x" \> "$m" ]; then
    m=$x
  fi
done
echo "$m"
