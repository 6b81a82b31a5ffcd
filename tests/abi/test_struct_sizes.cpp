// The struct layout checks of test_struct_sizes.c, compiled as C++: a C++ caller sees the same
// sizes, alignments and offsets as a C caller.
#include "test_struct_sizes.c"
