// every kind of argument the parser takes
typedef struct point point_t;
typedef unsigned long long u64;
typedef int (*cmp_fn)(const void *, const void *);
const char *name_of(const char *s, char *buf, unsigned u, long long ll);
double f(float, double, size_t, ssize_t, struct point *p, enum color c, _Bool b);
void sort(void *base, int (*cmp)(const void *, const void *), char const *v[]);
extern unsigned short int hs(signed char c, unsigned char u, short h);
int logf_like(const char *fmt, ...);
u64 wide(u64 a, cmp_fn f, volatile int *restrict q);
int getpid_like(void);
