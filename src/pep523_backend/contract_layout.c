/* What a C compiler makes of contract.h: every shared struct's size and its
 * members' offsets, and every flag's value, named. A cargo test
 * (contract.rs) compares them with the Rust mirror. */
#include <stddef.h>
#include "contract.h"

typedef struct {
    const char *name;
    size_t value;
} fh_layout_entry;

#define SIZE(type) {#type, sizeof(type)}
#define MEMBER(type, member) {#type "." #member, offsetof(type, member)}
#define FLAG(flag) {#flag, (size_t)(flag)}

const fh_layout_entry framehook_contract_layout[] = {
    SIZE(fh_frame_view),
    MEMBER(fh_frame_view, tstate),
    MEMBER(fh_frame_view, frame),
    MEMBER(fh_frame_view, code),
    MEMBER(fh_frame_view, caller),
    MEMBER(fh_frame_view, context),
    SIZE(fh_native_frame),
    MEMBER(fh_native_frame, view),
    MEMBER(fh_native_frame, current),
    MEMBER(fh_native_frame, original),
    SIZE(fh_native_link),
    MEMBER(fh_native_link, hook),
    MEMBER(fh_native_link, user_data),
    MEMBER(fh_native_link, owner),
    SIZE(fh_native_chain),
    MEMBER(fh_native_chain, refs),
    MEMBER(fh_native_chain, generation),
    MEMBER(fh_native_chain, release_owner),
    MEMBER(fh_native_chain, count),
    MEMBER(fh_native_chain, links),
    SIZE(fh_decision),
    MEMBER(fh_decision, code),
    MEMBER(fh_decision, arg_map),
    MEMBER(fh_decision, arg_map_owner),
    MEMBER(fh_decision, observers),
    MEMBER(fh_decision, after_frame),
    SIZE(fh_upcalls),
    MEMBER(fh_upcalls, dispatch),
    MEMBER(fh_upcalls, dispatch_native_rest),
    MEMBER(fh_upcalls, release),
    MEMBER(fh_upcalls, passthrough_observers),
    MEMBER(fh_upcalls, observe),
    MEMBER(fh_upcalls, release_observers),
    MEMBER(fh_upcalls, finish),
    MEMBER(fh_upcalls, release_native_owner),
    SIZE(fh_context),
    MEMBER(fh_context, generation),
    MEMBER(fh_context, code_extra_index),
    MEMBER(fh_context, upcalls),
    MEMBER(fh_context, native_chain),
    MEMBER(fh_context, native_chain_readers),
    SIZE(fh_code_state_head),
    MEMBER(fh_code_state_head, declined_in),
    MEMBER(fh_code_state_head, replaced_in),
    MEMBER(fh_code_state_head, replacement),
    FLAG(FH_GENERATION_OBSERVING),
    FLAG(FH_GENERATION_NATIVE_CHAIN),
    FLAG(FH_GENERATION_SCOPED),
    FLAG(FH_GENERATION_STEP),
};

const size_t framehook_contract_layout_len = sizeof(framehook_contract_layout) / sizeof(framehook_contract_layout[0]);
