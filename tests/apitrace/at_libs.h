/* The libraries that the API-tracing tests trace: libapitrace_a (at_ping, at_scale,
 * at_set_errno, at_sum_point; built with debug information), libapitrace_b (at_pong, which
 * calls back into at_ping; built without), libapitrace_c (at_late, loaded with dlopen, which
 * calls at_ping) and libapitrace_d (at_outer, loaded with dlopen by api_prog, which calls
 * at_late). */
#pragma once

struct at_point {
    double x, y;
};

int at_ping(int n);
int at_pong(int n);
double at_scale(double k, const struct at_point *p);
int at_set_errno(int code);
int at_sum_point(struct at_point p); /* a struct by value: its debug information refuses it */
int at_late(int n);
int at_outer(int n);
