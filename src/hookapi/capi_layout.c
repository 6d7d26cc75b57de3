/* What a C compiler makes of framehook.h's structs, in the order the header
 * declares their members; a Rust test compares it with framehook_capi::ffi. */
#include <stddef.h>
#include "framehook.h"

const size_t framehook_capi_layout[21] = {
    sizeof(framehook_hook_spec),
    offsetof(framehook_hook_spec, size),
    offsetof(framehook_hook_spec, name),
    offsetof(framehook_hook_spec, hook),
    offsetof(framehook_hook_spec, observe),
    offsetof(framehook_hook_spec, user_data),
    offsetof(framehook_hook_spec, free_user_data),
    offsetof(framehook_hook_spec, cache),
    offsetof(framehook_hook_spec, on_error),
    sizeof(framehook_api),
    offsetof(framehook_api, version),
    offsetof(framehook_api, size),
    offsetof(framehook_api, add_hook),
    offsetof(framehook_api, remove_hook),
    offsetof(framehook_api, set_enabled),
    offsetof(framehook_api, frame_code),
    offsetof(framehook_api, frame_original_code),
    offsetof(framehook_api, frame_globals),
    offsetof(framehook_api, frame_builtins),
    offsetof(framehook_api, frame_locals),
    offsetof(framehook_api, frame_back),
};
