/* The floating-point exception flags numpy reports after each ufunc loop
 * (invalid, divide by zero, overflow, underflow), for the fused elementwise
 * kernels of src/sot/elementwise: cleared before a kernel computes, read
 * after. Standard C's <fenv.h>; on x86-64, where the kernels' arithmetic is
 * SSE's, MXCSR's flags directly (feclearexcept saves and reloads the x87
 * environment too, which costs more than a small kernel's arithmetic). */
#include <fenv.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
/* MXCSR's sticky flags: invalid, denormal, divide by zero, overflow, underflow, precision. */
#define MXCSR_FLAGS 0x3f
#define MXCSR_REPORTED (_MM_EXCEPT_INVALID | _MM_EXCEPT_DIV_ZERO | _MM_EXCEPT_OVERFLOW | _MM_EXCEPT_UNDERFLOW)
#endif

void framehook_fp_flags_clear(void) {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_setcsr(_mm_getcsr() & ~MXCSR_FLAGS);
#else
    feclearexcept(FE_ALL_EXCEPT);
#endif
}

/* `written` is the memory the kernel computed into: passed so that no
 * compiler can sink the arithmetic that fills it past this call. */
int framehook_fp_flags_reported(const void *written) {
    (void)written;
#if defined(__x86_64__) || defined(_M_X64)
    return (_mm_getcsr() & MXCSR_REPORTED) != 0;
#else
    return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW) != 0;
#endif
}
