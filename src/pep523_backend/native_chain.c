/* Native chains: the hooks of a generation in which every enabled hook is an
 * uncached native hook and none observes, published by the Rust side for the
 * eval function to call itself (eval.c asks them; retaining and releasing are
 * inline in shim_internal.h). */
#include "shim_internal.h"

#ifdef Py_GIL_DISABLED
#  include <sched.h>
#endif

fh_native_chain *fh_native_chain_new(const fh_context *context, Py_ssize_t count, unsigned long long generation)
{
    fh_native_chain *chain = PyMem_RawCalloc(1, sizeof(fh_native_chain) + (size_t)count * sizeof(fh_native_link));
    if (chain == NULL) {
        return NULL;
    }
    chain->refs = 1;
    chain->generation = generation;
    chain->release_owner = context->upcalls.release_native_owner;
    chain->count = count;
    return chain;
}

FH_COLD void fh_native_chain_free(fh_native_chain *chain)
{
    for (Py_ssize_t i = 0; i < chain->count; i++) {
        chain->release_owner(chain->links[i].owner);
    }
    PyMem_RawFree(chain);
}

void fh_publish_native_chain(fh_context *context, fh_native_chain *chain)
{
    fh_native_chain *previous = atomic_exchange(&context->native_chain, chain);
    if (previous == NULL) {
        return;
    }
#ifdef Py_GIL_DISABLED
    /* A reader that loaded `previous` retains it before it stops counting. */
    while (atomic_load(&context->native_chain_readers) != 0) {
        sched_yield();
    }
#endif
    fh_native_chain_release(previous);
}
