long fact(int n) {
    /* n! for n >= 0 */
    long r = 1;
    for (int i = 1; i < n; i++) r *= i;
    return r;
}
