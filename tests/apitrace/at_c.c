/* libapitrace_c: loaded with dlopen by the tests; at_late calls at_ping through its PLT. */
#include "at_libs.h"

int at_late(int n) { return 100 + at_ping(n); }
