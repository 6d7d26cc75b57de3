//! The global allocator: mimalloc, through its plain entry points wherever the alignment
//! asked for is one every mimalloc block has (nearly every Rust allocation), its aligned
//! ones otherwise.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned,
};

/// The alignment of every block mimalloc hands out, whatever its size (its smallest size
/// class is a word).
const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

// SAFETY: each method hands the layout's size to mimalloc and asks for its alignment where
// a plain block's may fall short of it; mi_free and mi_realloc take a block from any of
// mimalloc's entry points.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: a plain block is aligned to PLAIN_ALIGN at least.
            unsafe { mi_malloc(layout.size()) as *mut u8 }
        } else {
            // SAFETY: mimalloc's aligned allocation, for any power-of-two alignment.
            unsafe { mi_malloc_aligned(layout.size(), layout.align()) as *mut u8 }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: as in `alloc`, zeroed.
            unsafe { mi_zalloc(layout.size()) as *mut u8 }
        } else {
            // SAFETY: as in `alloc`, zeroed.
            unsafe { mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8 }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (GlobalAlloc's contract).
        unsafe { mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            // SAFETY: `ptr` came from this allocator; the new block is aligned as in `alloc`.
            unsafe { mi_realloc(ptr as *mut c_void, new_size) as *mut u8 }
        } else {
            // SAFETY: `ptr` came from this allocator with `layout`'s alignment.
            unsafe { mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8 }
        }
    }
}
