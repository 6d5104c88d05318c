//! No allocation per request when rendering templated requests: after a warm-up, rendering a
//! request that uses every generator (and picking it from a weighted mix) allocates nothing,
//! counted by a global allocator on this thread only.

use reqlife::model::{Scheme, Target};
use reqlife::workload::gen::GenState;
use reqlife::workload::mix::Mix;
use reqlife::workload::request::RequestSpec;
use reqlife::workload::template::{Field, Sources, Template};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Allocations made by this thread (const-initialised: reading it never allocates).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn rendering_allocates_nothing_after_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keys.txt"), "alpha\nbeta\ngamma-delta\n").unwrap();
    let mut src = Sources::new(dir.path());
    let mut t = |text: &str, field| Template::parse_in(text, field, &mut src).unwrap();
    let put = RequestSpec {
        id: 0,
        name: "put".into(),
        method: "PUT".into(),
        path: t(
            "/kv/{seq}/{seq:0:99}/{line:keys.txt}?u={uniform:-5:5000}&z={zipf:1000000:1.1}&p={pareto:1000:1.2}",
            Field::Path,
        ),
        headers: vec![
            ("X-Id".into(), t("{uuid}", Field::Header)),
            ("X-Kind".into(), t("{choice:a|bb|ccc}", Field::Header)),
        ],
        // a body of varying length: rendered aside for its Content-Length
        body: t("{random_text:100}{random_bytes:20}{seq}", Field::Body),
    };
    let get = RequestSpec {
        id: 1,
        name: "get".into(),
        method: "GET".into(),
        path: t("/kv/{zipf:1000:0.9}", Field::Path),
        headers: Vec::new(),
        body: Template::default(),
    };
    let target = Target {
        url: "http://127.0.0.1:8080/".into(),
        scheme: Scheme::Http,
        host: "127.0.0.1".into(),
        port: 8080,
        path_and_query: "/".into(),
        addr: "127.0.0.1:8080".parse().unwrap(),
        resolved_in: None,
    };
    let prepared = [put.prepare(&target, true), get.prepare(&target, true)];
    let mix = Mix::weighted(&[(0, 1), (1, 3)]).unwrap();
    let mut state = GenState::new(7, 1, 4);
    let mut out = Vec::with_capacity(4096);
    let send = |state: &mut GenState, out: &mut Vec<u8>| {
        out.clear();
        prepared[mix.pick(state)].render_into(out, state);
    };
    // warm-up: the counters and the scratch buffer grow to their size
    for _ in 0..1000 {
        send(&mut state, &mut out);
    }
    let before = ALLOCATIONS.with(Cell::get);
    for _ in 0..20_000 {
        send(&mut state, &mut out);
    }
    let allocations = ALLOCATIONS.with(Cell::get) - before;
    assert_eq!(
        allocations, 0,
        "20,000 renders allocated {allocations} times"
    );
    // the counter does count this thread's allocations
    let v: Vec<u8> = Vec::with_capacity(10);
    assert!(ALLOCATIONS.with(Cell::get) > before, "{}", v.capacity());
}
