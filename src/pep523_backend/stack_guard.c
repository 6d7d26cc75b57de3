/* The C-stack guard (see shim_internal.h): with any PEP 523 function
 * installed, every Python-to-Python call recurses in C. Where the evaluator
 * does not check the C stack itself (3.9-3.11), that depth was bounded only by
 * the recursion limit, so a high limit overflowed the C stack (3.9 and 3.11 at
 * limit 20000, where the same program without an eval function ends in
 * RecursionError). There, frames refuse to start once the thread's stack is
 * nearly used up. */
#include "shim_internal.h"

#if FH_C_STACK_GUARD
#include <pthread.h>

/* The thread's stack is [fh_stack_base, ...); frames start above fh_stack_floor. */
static FH_THREAD_LOCAL char *fh_stack_base;
static FH_THREAD_LOCAL char *fh_stack_floor;
static FH_THREAD_LOCAL int fh_stack_floor_known;

static void find_stack_floor(void)
{
    fh_stack_floor_known = 1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return;
    }
    void *base;
    size_t size;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
        /* Room to raise, unwind and run what a refused frame's caller does
         * next; debug builds' frames are several times larger. */
        size_t margin = size / 8;
        if (margin > 1024 * 1024) {
            margin = 1024 * 1024;
        }
        fh_stack_base = base;
        fh_stack_floor = (char *)base + margin;
    }
    pthread_attr_destroy(&attr);
}

int fh_c_stack_exhausted(void)
{
    if (!fh_stack_floor_known) {
        find_stack_floor();
    }
    /* Code running on a stack of its own (a fiber library's) is not checked. */
    char *here = __builtin_frame_address(0);
    return here >= fh_stack_base && here < fh_stack_floor;
}
#endif /* FH_C_STACK_GUARD */
