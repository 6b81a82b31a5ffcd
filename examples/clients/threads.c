/*
 * A program for the thread and module logger: starts two named threads and, in between, loads
 * and unloads a shared object given on the command line (`threads LIB.so`).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) {
    pthread_setname_np(pthread_self(), (const char *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, NULL, work, "worker-a");
    pthread_join(t, NULL);
    if (argc > 1) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (h == NULL) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        dlclose(h);
    }
    pthread_create(&t, NULL, work, "worker-b");
    pthread_join(t, NULL);
    return 0;
}
