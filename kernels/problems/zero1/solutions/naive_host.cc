// Naive correct host candidate: the host reference itself (a file of the
// candidate ABI that includes only candidate.h and the suite's host_math.h).
#include "../reference_host.cc"
