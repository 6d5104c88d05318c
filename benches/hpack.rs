//! What decoding a typical response's header block costs (HPACK, HTTP/2's header
//! compression): nginx's answer to a GET of a static page, eight fields in 100 bytes, its
//! values Huffman-coded literals that never enter the dynamic table. Decoded in full (a new
//! `date` each second makes a new block), and the same block again, which the decoder
//! replays from its last decoding (a server's identical responses within a second).
//!
//! Run: `cargo bench --bench hpack` (divan; `-- --sample-count 20` for a shorter run). It
//! prints figures and asserts no time: the machine is shared and noisy (`bench/README.md`).

use divan::{black_box, Bencher};
use reqlife::engine::http2::hpack::Decoder;

fn main() {
    divan::main();
}

/// `:status 200` indexed (`0x88`), then seven literals without indexing, each a static
/// table name's index and a Huffman-coded value (RFC 7541, 6.2.2 and 5.2): the fields of
/// [`FIELDS`] after the first.
const BLOCK: [u8; 100] = [
    0x88, 0x0f, 0x27, 0x89, 0xaa, 0x63, 0x55, 0xe5, 0x80, 0xae, 0x27, 0x57, 0x6b, 0x0f, 0x12, 0x96,
    0xdf, 0x69, 0x7e, 0x94, 0x03, 0xca, 0x43, 0x5d, 0x8a, 0x08, 0x02, 0x6d, 0x40, 0x8a, 0xe3, 0x2d,
    0x5c, 0x6d, 0xc5, 0x31, 0x68, 0xdf, 0x0f, 0x10, 0x87, 0x49, 0x7c, 0xa5, 0x89, 0xd3, 0x4d, 0x1f,
    0x0f, 0x0d, 0x83, 0x70, 0x2d, 0xff, 0x0f, 0x1d, 0x96, 0xdf, 0x69, 0x7e, 0x94, 0x03, 0x4a, 0x61,
    0x2c, 0x6a, 0x08, 0x02, 0x6d, 0x40, 0xb9, 0x70, 0x01, 0xb8, 0xd8, 0x54, 0xc5, 0xa3, 0x7f, 0x0f,
    0x13, 0x8b, 0xfe, 0x5c, 0x74, 0x62, 0x64, 0x6d, 0x4a, 0xb0, 0x9c, 0x77, 0xf9, 0x0f, 0x03, 0x84,
    0x8f, 0xd2, 0x4a, 0x8f,
];

/// What [`BLOCK`] decodes to.
const FIELDS: [(&str, &str); 8] = [
    (":status", "200"),
    ("server", "nginx/1.27.4"),
    ("date", "Tue, 08 Apr 2025 12:34:56 GMT"),
    ("content-type", "text/html"),
    ("content-length", "615"),
    ("last-modified", "Tue, 04 Feb 2025 16:01:51 GMT"),
    ("etag", "\"67a23a4f-267\""),
    ("accept-ranges", "bytes"),
];

/// A decoder that has decoded [`BLOCK`] once, checked: a figure for a block that does not
/// decode to its fields would measure an error path.
fn checked_decoder() -> Decoder {
    let mut d = Decoder::new(4096);
    let mut fields = Vec::new();
    d.decode(&BLOCK, |name, value| {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        fields.push((text(name), text(value)));
    })
    .unwrap();
    let want: Vec<(String, String)> = FIELDS
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(fields, want, "the block does not decode to its fields");
    assert_eq!(
        d.table_len(),
        0,
        "a literal without indexing entered the table"
    );
    d
}

/// The block decoded in full: each iteration decodes it after a one-field block (`:status
/// 200` indexed, a few nanoseconds), so that it never repeats the last block and is not
/// replayed. Each field's name and value go to a callback that adds up their lengths.
#[divan::bench]
fn nginx_block_decoded(b: Bencher) {
    let mut d = checked_decoder();
    b.bench_local(|| {
        let mut total = 0usize;
        let mut add = |name: &[u8], value: &[u8]| total += name.len() + value.len();
        d.decode(black_box(&[0x88]), &mut add).unwrap();
        d.decode(black_box(&BLOCK), &mut add).unwrap();
        black_box(total)
    });
}

/// The same block again and again: replayed (the fields as kept from its last decoding).
#[divan::bench]
fn nginx_block_repeated(b: Bencher) {
    let mut d = checked_decoder();
    b.bench_local(|| {
        let mut total = 0usize;
        d.decode(black_box(&BLOCK), |name, value| {
            total += name.len() + value.len()
        })
        .unwrap();
        black_box(total)
    });
}
