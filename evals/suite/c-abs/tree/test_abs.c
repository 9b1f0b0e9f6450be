int my_abs(int x);
int main(void) {
    if (my_abs(-3) != 3) return 1;
    return 0;
}
