/* libapitrace_a: at_ping calls at_pong of libapitrace_b through its PLT (mutual recursion
 * between two traced libraries). */
#include <errno.h>

#include "at_libs.h"

int at_ping(int n) { return n <= 0 ? 0 : 1 + at_pong(n - 1); }

double at_scale(double k, const struct at_point *p) { return k * (p->x + p->y); }

int at_sum_point(struct at_point p) { return (int)(p.x + p.y); }

int at_set_errno(int code) {
    const int seen = errno;
    errno = code;
    return seen;
}
