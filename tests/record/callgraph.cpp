// The program of the recording tests: two threads, each computing with recursion, virtual
// calls through a base class and static functions. Built with -finstrument-functions.
// `callgraph N` runs both threads with depth N and prints a checksum.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

namespace zoo {

class Animal {
public:
    virtual ~Animal() = default;
    virtual int legs() const = 0;
};

class Bird : public Animal {
public:
    int legs() const override { return 2; }
};

class Cat : public Animal {
public:
    int legs() const override { return 4; }
};

}  // namespace zoo

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int count_legs(const zoo::Animal *const *animals, int n) {
    int total = 0;
    for (int i = 0; i < n; ++i) total += animals[i]->legs();
    return total;
}

static void *worker(void *arg) {
    const int n = *static_cast<int *>(arg);
    pthread_setname_np(pthread_self(), "walker");
    zoo::Bird bird;
    zoo::Cat cat;
    const zoo::Animal *animals[] = {&bird, &cat, &cat};
    long sum = 0;
    for (int i = 0; i < n; ++i) sum += count_legs(animals, 3);
    *static_cast<int *>(arg) = static_cast<int>(sum) + fib(n);
    return nullptr;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 10;
    int arg = n;
    pthread_t t;
    if (pthread_create(&t, nullptr, worker, &arg) != 0) return 1;
    const int mine = fib(n);
    pthread_join(t, nullptr);
    std::printf("checksum %d\n", mine + arg);
    return 0;
}
