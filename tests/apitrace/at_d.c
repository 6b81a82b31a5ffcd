/* libapitrace_d: loaded with dlopen by api_prog; at_outer calls at_late of libapitrace_c (loaded
 * with it) through its PLT, so a library named by --api that is loaded late is traced. */
#include "at_libs.h"

int at_outer(int n) { return at_late(n) + 1; }
