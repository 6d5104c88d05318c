//! What templating costs per request: copying a fixed prepared request (today's hot path) next
//! to rendering the same request from templates (`{seq}`, `{zipf:1000000:1.1}`,
//! `{random_text:100}`), and each generator alone. Every iteration appends one rendering to a
//! reused buffer, as a worker would before writing it.
//!
//! Run: `cargo bench --bench template` (divan; `-- --sample-count 20` for a shorter run).

use divan::{black_box, Bencher};
use reqlife::model::{Scheme, Target};
use reqlife::workload::gen::GenState;
use reqlife::workload::request::RequestSpec;
use reqlife::workload::template::{Field, Sources, Template};

fn main() {
    divan::main();
}

fn target() -> Target {
    Target {
        url: "http://127.0.0.1:8080/".into(),
        scheme: Scheme::Http,
        host: "127.0.0.1".into(),
        port: 8080,
        path_and_query: "/".into(),
        addr: "127.0.0.1:8080".parse().unwrap(),
        resolved_in: None,
    }
}

fn template(text: &str, field: Field) -> Template {
    Template::parse_in(text, field, &mut Sources::new(".")).unwrap()
}

/// A PUT of a 100-byte body with one extra header, as fixed bytes (about 190 bytes).
#[divan::bench]
fn fixed_request(b: Bencher) {
    let headers = [("X-Key".to_string(), "123456".to_string())];
    let p = RequestSpec::fixed("PUT", "/kv/12345", &headers, &[b'x'; 100]).prepare(&target(), true);
    let mut state = GenState::new(1, 0, 1);
    let mut out = Vec::with_capacity(1024);
    b.bench_local(|| {
        out.clear();
        p.render_into(&mut out, &mut state);
        black_box(out.len())
    });
}

/// The same request from templates: the sequence number in the path, a zipf key in a header,
/// a random 100-character body (of fixed length: no scratch copy).
#[divan::bench]
fn templated_request(b: Bencher) {
    let spec = RequestSpec {
        id: 0,
        name: "put".into(),
        method: "PUT".into(),
        path: template("/kv/{seq}", Field::Path),
        headers: vec![(
            "X-Key".into(),
            template("{zipf:1000000:1.1}", Field::Header),
        )],
        body: template("{random_text:100}", Field::Body),
    };
    let p = spec.prepare(&target(), true);
    let mut state = GenState::new(1, 0, 1);
    let mut out = Vec::with_capacity(1024);
    b.bench_local(|| {
        out.clear();
        p.render_into(&mut out, &mut state);
        black_box(out.len())
    });
}

/// The templated request with a body of varying length (`{seq}` in it): the body is rendered
/// aside to learn its Content-Length, then copied.
#[divan::bench]
fn templated_request_varying_body(b: Bencher) {
    let spec = RequestSpec {
        id: 0,
        name: "put".into(),
        method: "PUT".into(),
        path: template("/kv/{seq}", Field::Path),
        headers: vec![(
            "X-Key".into(),
            template("{zipf:1000000:1.1}", Field::Header),
        )],
        body: template("{random_text:100}{seq}", Field::Body),
    };
    let p = spec.prepare(&target(), true);
    let mut state = GenState::new(1, 0, 1);
    let mut out = Vec::with_capacity(1024);
    b.bench_local(|| {
        out.clear();
        p.render_into(&mut out, &mut state);
        black_box(out.len())
    });
}

/// One generator alone.
#[divan::bench(args = [
    "{seq}",
    "{seq:0:99999}",
    "{uniform:1:1000000}",
    "{zipf:1000000:1.1}",
    "{pareto:1000000:1.16}",
    "{choice:red|green|blue}",
    "{random_text:100}",
    "{random_bytes:100}",
    "{uuid}",
])]
fn generator(b: Bencher, text: &str) {
    let t = template(text, Field::Body);
    let mut state = GenState::new(1, 0, 1);
    let mut out = Vec::with_capacity(256);
    let mut seq = 0u64;
    b.bench_local(|| {
        out.clear();
        seq += 1;
        t.render_into(&mut out, &mut state, seq);
        black_box(out.len())
    });
}
