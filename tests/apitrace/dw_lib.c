/* A library whose functions' signatures the DWARF reader of API tracing reads back
 * (test_apitrace_dwarf.cpp): typedefs, qualifiers, enums, strings, every scalar width, and the
 * types that cannot be passed on. Built twice: with debug information and without. */
#include <stdarg.h>
#include <stddef.h>

typedef unsigned long uLong;
typedef unsigned int uInt;
typedef unsigned char Bytef;
typedef const char *cstr;
struct point {
    int x, y;
};
enum color { RED, GREEN };

uLong dw_crc(uLong crc, const Bytef *buf, uInt len);
uLong dw_crc(uLong crc, const Bytef *buf, uInt len) {
    for (uInt i = 0; i < len; ++i) crc = crc * 31 + buf[i];
    return crc;
}

const char *dw_name(const char *s, struct point *p);
const char *dw_name(const char *s, struct point *p) { return p != NULL && p->x > 0 ? s : "none"; }

double dw_scale(float f, double d, _Bool neg, signed char c, short s, unsigned short us, long long ll);
double dw_scale(float f, double d, _Bool neg, signed char c, short s, unsigned short us, long long ll) {
    const double v = (double)f * d + c + s + us + (double)ll;
    return neg ? -v : v;
}

void dw_void(void);
void dw_void(void) {}

int dw_enum(enum color c, cstr label, volatile const int *const cp);
int dw_enum(enum color c, cstr label, volatile const int *const cp) {
    return (int)c + (label != NULL) + (cp != NULL ? *cp : 0);
}

int dw_by_value(struct point p);
int dw_by_value(struct point p) { return p.x + p.y; }

struct point dw_ret_struct(int x);
struct point dw_ret_struct(int x) {
    struct point p = {x, x};
    return p;
}

long double dw_long_double(long double x);
long double dw_long_double(long double x) { return x * 2; }

int dw_sum(int n, ...);
int dw_sum(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; ++i) s += va_arg(ap, int);
    va_end(ap);
    return s;
}
