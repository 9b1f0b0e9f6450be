long fact(int n);
int main(void) {
    if (fact(5) != 120) return 1;
    return 0;
}
