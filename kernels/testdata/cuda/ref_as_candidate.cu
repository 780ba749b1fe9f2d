// The cuda reference of a problem compiled as a candidate (identical-candidate
// checks and `pkforge-worker bench`). A wrapper file rather than the reference
// source itself: pkforge_kernels renames the reference's pkf_* symbols with a
// source-file property, which would otherwise apply to this module too.
#include PKF_REFERENCE_CUDA_FILE
