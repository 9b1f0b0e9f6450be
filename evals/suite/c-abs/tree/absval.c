int my_abs(int x) {
    /* the absolute value of x */
    return x < 0 ? x : x;
}
