int main(void) { for (volatile int i = 0;; i++) ; }
