//! No allocation per request on the hot path: a run of 20,000 requests allocates no more than
//! a run of 2,000 (beyond a small slack for interval snapshots), counted by a global
//! allocator around in-process runs against a server that itself never allocates.

mod common;
use common::quiet_server;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_of_run(url: &str, requests: &str) -> u64 {
    let args = [
        "reqlife", "run", "-n", requests, "-c", "4", "-t", "2", "--quiet", "--json", url,
    ];
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let code = reqlife::app::main_with(args.iter().map(Into::into).collect());
    assert_eq!(code, 0);
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn allocations_do_not_grow_with_the_request_count() {
    let addr = quiet_server();
    let url = format!("http://{addr}/");
    // Warm the server's threads and connections paths once.
    allocations_of_run(&url, "100");
    let small = allocations_of_run(&url, "2000");
    let large = allocations_of_run(&url, "20000");
    // 18,000 more requests; a per-request allocation would add at least 18,000.
    let extra = large.saturating_sub(small);
    eprintln!("allocations: {small} for 2,000 requests, {large} for 20,000");
    assert!(
        extra < 500,
        "{small} allocations for 2,000 requests, {large} for 20,000: {extra} more"
    );
}
