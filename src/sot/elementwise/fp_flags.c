/* The floating-point exception flags numpy reports after each ufunc loop
 * (invalid, divide by zero, overflow, underflow), for the fused elementwise
 * kernels of src/sot/elementwise: cleared before a kernel computes, read
 * after. Standard C: the flags' names and bits are the platform's. */
#include <fenv.h>

void framehook_fp_flags_clear(void) { feclearexcept(FE_ALL_EXCEPT); }

/* `written` is the memory the kernel computed into: passed so that no
 * compiler can sink the arithmetic that fills it past this call. */
int framehook_fp_flags_reported(const void *written) {
    (void)written;
    return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW) != 0;
}
