#!/bin/sh
# Print the number of words in the file "$1".
wc -c < "$1" | tr -d ' '
