/* Two threads, each storing to its own 4096-int array: the main thread's references and each
 * worker's are separate shards with their own thread ids. */
#include <pthread.h>
#include <stdio.h>

enum { kInts = 4096 };

static int arrays[2][kInts] __attribute__((aligned(64)));

static void *work(void *arg) {
    int *p = arg;
    for (int i = 0; i < kInts; ++i) p[i] = i;
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; ++i)
        if (pthread_create(&t[i], NULL, work, arrays[i]) != 0) return 1;
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    printf("%d\n", arrays[0][kInts - 1] + arrays[1][kInts - 1]);
    return 0;
}
