/* libapitrace_b: at_pong calls at_ping of libapitrace_a through its PLT. */
#include "at_libs.h"

int at_pong(int n) { return n <= 0 ? 0 : 1 + at_ping(n - 1); }
